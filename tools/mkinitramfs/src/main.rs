//! `mkinitramfs [-o OUTPUT] [LIST]`: builds a newc cpio archive (an
//! initramfs) from a list in Linux's `gen_init_cpio` format, byte for byte
//! the archive `perl shared/reflinux/mkcpio.pl < LIST` writes.
//!
//! The list is read from LIST, or from standard input when LIST is absent or
//! `-`; the archive goes to OUTPUT, or to standard output. `file` locations
//! are relative to the current directory. On any error nothing is written
//! and the exit status is 1 (2 for a bad command line).

mod list;

use std::fs;
use std::io::{self, Read, Write};
use std::process::ExitCode;

const USAGE: &str = "usage: mkinitramfs [-o OUTPUT] [LIST]

Builds a newc cpio archive from LIST (standard input if absent or '-'),
written to OUTPUT (standard output if absent or '-'). LIST lines:
  dir   NAME MODE UID GID
  file  NAME LOCATION MODE UID GID
  slink NAME TARGET MODE UID GID
  nod   NAME MODE UID GID c|b MAJOR MINOR
MODE is octal; '#' starts a comment line.";

/// What the command line asks for.
#[derive(Debug, PartialEq, Eq)]
struct Options {
    /// `None` for standard input.
    list: Option<String>,
    /// `None` for standard output.
    output: Option<String>,
}

/// The command line did not parse, or asked for help.
#[derive(Debug, PartialEq, Eq)]
enum Command {
    Run(Options),
    Help,
}

fn parse_args(args: impl IntoIterator<Item = String>) -> Result<Command, String> {
    let mut list = None;
    let mut output = None;
    let mut args = args.into_iter();
    let mut only_operands = false;
    while let Some(arg) = args.next() {
        let operand = if only_operands || arg == "-" || !arg.starts_with('-') {
            arg
        } else if arg == "--" {
            only_operands = true;
            continue;
        } else if arg == "-h" || arg == "--help" {
            return Ok(Command::Help);
        } else if arg == "-o" || arg == "--output" {
            let file = args.next().ok_or_else(|| format!("{arg} needs a file name"))?;
            output = Some(file);
            continue;
        } else if let Some(file) = arg.strip_prefix("-o") {
            output = Some(file.to_string());
            continue;
        } else {
            return Err(format!("unknown option '{arg}'"));
        };
        if list.replace(operand).is_some() {
            return Err("more than one list given".to_string());
        }
    }
    let dash_is_std = |name: Option<String>| name.filter(|n| n != "-");
    Ok(Command::Run(Options {
        list: dash_is_std(list),
        output: dash_is_std(output),
    }))
}

fn run(options: &Options) -> Result<(), String> {
    let (list, list_name) = match &options.list {
        Some(path) => {
            let bytes = fs::read(path).map_err(|e| format!("cannot read list '{path}': {e}"))?;
            (bytes, path.as_str())
        }
        None => {
            let mut bytes = Vec::new();
            io::stdin()
                .read_to_end(&mut bytes)
                .map_err(|e| format!("cannot read the list from standard input: {e}"))?;
            (bytes, "<stdin>")
        }
    };
    let archive = list::build_archive(&list, |location| fs::read(location))
        .map_err(|e| format!("{list_name}:{}: {}", e.line, e.message))?;
    match &options.output {
        Some(path) => fs::write(path, &archive).map_err(|e| format!("cannot write '{path}': {e}")),
        None => {
            let mut out = io::stdout().lock();
            out.write_all(&archive)
                .and_then(|()| out.flush())
                .map_err(|e| format!("cannot write to standard output: {e}"))
        }
    }
}

fn main() -> ExitCode {
    match parse_args(std::env::args().skip(1)) {
        Ok(Command::Help) => {
            println!("{USAGE}");
            ExitCode::SUCCESS
        }
        Ok(Command::Run(options)) => match run(&options) {
            Ok(()) => ExitCode::SUCCESS,
            Err(message) => {
                eprintln!("mkinitramfs: {message}");
                ExitCode::FAILURE
            }
        },
        Err(message) => {
            eprintln!("mkinitramfs: {message}\n{USAGE}");
            ExitCode::from(2)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Result<Command, String> {
        parse_args(list.iter().map(|s| s.to_string()))
    }

    fn run_with(list: Option<&str>, output: Option<&str>) -> Command {
        Command::Run(Options {
            list: list.map(str::to_string),
            output: output.map(str::to_string),
        })
    }

    #[test]
    fn command_line_forms() {
        assert_eq!(args(&[]), Ok(run_with(None, None)));
        assert_eq!(args(&["-"]), Ok(run_with(None, None)));
        assert_eq!(args(&["l"]), Ok(run_with(Some("l"), None)));
        assert_eq!(args(&["-o", "x", "l"]), Ok(run_with(Some("l"), Some("x"))));
        assert_eq!(args(&["l", "-ox"]), Ok(run_with(Some("l"), Some("x"))));
        assert_eq!(args(&["--output", "-"]), Ok(run_with(None, None)));
        assert_eq!(args(&["--", "-o"]), Ok(run_with(Some("-o"), None)));
        assert_eq!(args(&["-h"]), Ok(Command::Help));
        assert!(args(&["-o"]).unwrap_err().contains("needs a file name"));
        assert!(args(&["a", "b"]).unwrap_err().contains("more than one"));
        assert!(args(&["-x"]).unwrap_err().contains("unknown option '-x'"));
    }
}
