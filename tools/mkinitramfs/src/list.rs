//! The list format of Linux's `usr/gen_init_cpio`, as
//! `shared/reflinux/mkcpio.pl` reads it:
//!
//! ```text
//! # comment
//! dir   NAME MODE UID GID
//! file  NAME LOCATION MODE UID GID
//! slink NAME TARGET MODE UID GID
//! nod   NAME MODE UID GID c|b MAJOR MINOR
//! ```
//!
//! Fields are separated by whitespace; MODE is octal permissions, the ids
//! and device numbers are decimal. Blank lines and lines whose first
//! non-blank character is `#` are skipped. Where `mkcpio.pl` would quietly
//! write something else (a missing field, a number it cannot read, an extra
//! field such as `gen_init_cpio`'s hard-link names), this tool stops with an
//! error instead; every list both accept gives the same archive.

use std::fmt;

use cpio::{DeviceKind, Metadata, Writer};

/// One line of a list that describes an entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListEntry<'a> {
    /// `dir NAME MODE UID GID`
    Dir {
        /// Path in the archive.
        name: &'a str,
        /// Permissions and owner.
        meta: Metadata,
    },
    /// `file NAME LOCATION MODE UID GID`
    File {
        /// Path in the archive.
        name: &'a str,
        /// Host file whose contents are stored, relative to the current
        /// directory.
        location: &'a str,
        /// Permissions and owner.
        meta: Metadata,
    },
    /// `slink NAME TARGET MODE UID GID`
    Slink {
        /// Path in the archive.
        name: &'a str,
        /// What the link points to.
        target: &'a str,
        /// Permissions and owner.
        meta: Metadata,
    },
    /// `nod NAME MODE UID GID c|b MAJOR MINOR`
    Nod {
        /// Path in the archive.
        name: &'a str,
        /// Permissions and owner.
        meta: Metadata,
        /// Character or block device.
        kind: DeviceKind,
        /// Device major number.
        major: u32,
        /// Device minor number.
        minor: u32,
    },
}

/// A problem with one line of the list, numbered from 1.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineError {
    /// Line number, from 1.
    pub line: usize,
    /// What is wrong with it.
    pub message: String,
}

impl fmt::Display for LineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

/// Builds the archive that `list` describes, reading each `file` entry's
/// contents through `read_file` (given the LOCATION field).
pub fn build_archive<F>(list: &[u8], mut read_file: F) -> Result<Vec<u8>, LineError>
where
    F: FnMut(&str) -> std::io::Result<Vec<u8>>,
{
    let mut writer = Writer::new();
    // Lines as Perl's `<STDIN>` gives them: split after each newline, the
    // last one possibly unterminated.
    for (index, raw) in list.split_inclusive(|&b| b == b'\n').enumerate() {
        let line = index + 1;
        let at = |message: String| LineError { line, message };
        let text = std::str::from_utf8(raw).map_err(|_| at("line is not valid UTF-8".to_string()))?;
        let Some(entry) = parse_line(text).map_err(at)? else {
            continue;
        };
        let written = match entry {
            ListEntry::Dir { name, meta } => writer.dir(name, meta),
            ListEntry::File { name, location, meta } => {
                let data = read_file(location).map_err(|e| at(format!("cannot read file '{location}': {e}")))?;
                writer.file(name, meta, &data)
            }
            ListEntry::Slink { name, target, meta } => writer.symlink(name, target, meta),
            ListEntry::Nod {
                name,
                meta,
                kind,
                major,
                minor,
            } => writer.device(name, kind, major, minor, meta),
        };
        written.map_err(|e| at(format!("'{}': {e}", entry_name(&entry))))?;
    }
    Ok(writer.finish())
}

fn entry_name<'a>(entry: &ListEntry<'a>) -> &'a str {
    match entry {
        ListEntry::Dir { name, .. }
        | ListEntry::File { name, .. }
        | ListEntry::Slink { name, .. }
        | ListEntry::Nod { name, .. } => name,
    }
}

/// Parses one line: `Ok(None)` for a blank line or a comment.
pub fn parse_line(line: &str) -> Result<Option<ListEntry<'_>>, String> {
    let trimmed = line.trim_start_matches(is_perl_space);
    if trimmed.is_empty() || trimmed.starts_with('#') {
        return Ok(None);
    }
    let mut words = trimmed.split(is_perl_space).filter(|w| !w.is_empty());
    let Some(kind) = words.next() else {
        return Ok(None);
    };
    let fields: Vec<&str> = words.collect();
    let entry = match kind {
        "dir" => {
            let [name, mode, uid, gid] = take(&fields, "dir NAME MODE UID GID")?;
            ListEntry::Dir {
                name,
                meta: meta(mode, uid, gid)?,
            }
        }
        "file" => {
            let [name, location, mode, uid, gid] = take(&fields, "file NAME LOCATION MODE UID GID")?;
            ListEntry::File {
                name,
                location,
                meta: meta(mode, uid, gid)?,
            }
        }
        "slink" => {
            let [name, target, mode, uid, gid] = take(&fields, "slink NAME TARGET MODE UID GID")?;
            ListEntry::Slink {
                name,
                target,
                meta: meta(mode, uid, gid)?,
            }
        }
        "nod" => {
            let [name, mode, uid, gid, dev, major, minor] = take(&fields, "nod NAME MODE UID GID c|b MAJOR MINOR")?;
            let kind = match dev {
                "c" => DeviceKind::Char,
                "b" => DeviceKind::Block,
                _ => {
                    return Err(format!(
                        "device type '{dev}' is neither 'c' (character) nor 'b' (block)"
                    ))
                }
            };
            ListEntry::Nod {
                name,
                meta: meta(mode, uid, gid)?,
                kind,
                major: decimal("MAJOR", major)?,
                minor: decimal("MINOR", minor)?,
            }
        }
        other => {
            return Err(format!(
                "unknown entry type '{other}' (expected dir, file, slink or nod)"
            ))
        }
    };
    Ok(Some(entry))
}

/// Perl's `\s` on a byte string, which `mkcpio.pl` splits fields on: ASCII
/// whitespace only, so a name may hold any other character.
fn is_perl_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\r' | '\x0B' | '\x0C')
}

/// Exactly `N` fields, or `N` followed by a `#` comment.
fn take<'a, const N: usize>(fields: &[&'a str], usage: &str) -> Result<[&'a str; N], String> {
    let (wanted, extra) = fields.split_at(fields.len().min(N));
    let wanted: [&str; N] = wanted.try_into().map_err(|_| {
        format!(
            "expected {N} fields after the type, found {}; the form is: {usage}",
            fields.len()
        )
    })?;
    match extra.first() {
        Some(word) if !word.starts_with('#') => {
            let hint = if usage.starts_with("file") {
                " (hard links are not supported)"
            } else {
                ""
            };
            Err(format!("unexpected extra field '{word}'{hint}; the form is: {usage}"))
        }
        _ => Ok(wanted),
    }
}

fn meta(mode: &str, uid: &str, gid: &str) -> Result<Metadata, String> {
    Ok(Metadata::new(
        permissions(mode)?,
        decimal("UID", uid)?,
        decimal("GID", gid)?,
    ))
}

/// Octal permissions, at most `7777`.
fn permissions(mode: &str) -> Result<u32, String> {
    let bad = || format!("MODE '{mode}' is not octal permissions between 0 and 7777");
    // `from_str_radix` would also take a sign.
    if mode.is_empty() || !mode.bytes().all(|b| (b'0'..=b'7').contains(&b)) {
        return Err(bad());
    }
    match u32::from_str_radix(mode, 8) {
        Ok(value) if value <= 0o7777 => Ok(value),
        _ => Err(bad()),
    }
}

/// A decimal number that fits in a 32-bit header field.
fn decimal(what: &str, text: &str) -> Result<u32, String> {
    let bad = || format!("{what} '{text}' is not a decimal number between 0 and 4294967295");
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    text.parse().map_err(|_| bad())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(line: &str) -> String {
        parse_line(line).unwrap_err()
    }

    #[test]
    fn parses_every_entry_type() {
        assert_eq!(
            parse_line("dir /dev 0755 0 0").unwrap(),
            Some(ListEntry::Dir {
                name: "/dev",
                meta: Metadata::new(0o755, 0, 0)
            })
        );
        assert_eq!(
            parse_line("\tfile /init  build/init 4755 1000 100\r\n").unwrap(),
            Some(ListEntry::File {
                name: "/init",
                location: "build/init",
                meta: Metadata::new(0o4755, 1000, 100)
            })
        );
        assert_eq!(
            parse_line("slink /bin/sh busybox 777 0 0 # the shell").unwrap(),
            Some(ListEntry::Slink {
                name: "/bin/sh",
                target: "busybox",
                meta: Metadata::new(0o777, 0, 0)
            })
        );
        assert_eq!(
            parse_line("nod /dev/sda 660 0 6 b 8 0").unwrap(),
            Some(ListEntry::Nod {
                name: "/dev/sda",
                meta: Metadata::new(0o660, 0, 6),
                kind: DeviceKind::Block,
                major: 8,
                minor: 0
            })
        );
    }

    #[test]
    fn skips_blank_lines_and_comments() {
        for line in ["", "\n", "   \t\r\n", "# dir /x 755 0 0", "   #x"] {
            assert_eq!(parse_line(line), Ok(None), "{line:?}");
        }
    }

    #[test]
    fn refuses_what_mkcpio_would_write_wrongly() {
        assert!(err("dir /x 755 0").contains("expected 4 fields"));
        assert!(err("nod /x 600 0 0 c 5").contains("nod NAME MODE UID GID c|b MAJOR MINOR"));
        assert!(err("file /x y 644 0 0 /x2").contains("hard links are not supported"));
        assert!(err("dir /x 755 0 0 extra").contains("unexpected extra field 'extra'"));
        assert!(err("dir /x 0x1ed 0 0").contains("MODE '0x1ed'"));
        assert!(err("dir /x 789 0 0").contains("MODE '789'"));
        assert!(err("dir /x 40755 0 0").contains("between 0 and 7777"));
        assert!(err("dir /x +755 0 0").contains("MODE"));
        assert!(err("dir /x 755 -1 0").contains("UID '-1'"));
        assert!(err("dir /x 755 0 4294967296").contains("GID '4294967296'"));
        assert!(err("nod /x 600 0 0 p 1 2").contains("device type 'p'"));
        assert!(err("nod /x 600 0 0 c +1 2").contains("MAJOR '+1'"));
        assert!(err("nod /x 600 0 0 c 1 x").contains("MINOR 'x'"));
        assert!(err("pipe /x 600 0 0").contains("unknown entry type 'pipe'"));
    }

    #[test]
    fn errors_carry_the_line_number() {
        let list = b"# header\n\ndir /a 755 0 0\ndir /b 7a5 0 0\n";
        let e = build_archive(list, |_| unreachable!()).unwrap_err();
        assert_eq!(e.line, 4);
        assert_eq!(
            e.to_string(),
            "line 4: MODE '7a5' is not octal permissions between 0 and 7777"
        );

        let list = b"dir /a 755 0 0\nfile /b missing 644 0 0";
        let e = build_archive(list, |_| Err(std::io::Error::from(std::io::ErrorKind::NotFound))).unwrap_err();
        assert_eq!(e.line, 2);
        assert!(e.message.starts_with("cannot read file 'missing': "));

        let e = build_archive(b"dir /a 755 0 0\n\xff\n", |_| unreachable!()).unwrap_err();
        assert_eq!((e.line, e.message.as_str()), (2, "line is not valid UTF-8"));

        let e = build_archive(b"\n\ndir //TRAILER!!! 755 0 0\n", |_| unreachable!()).unwrap_err();
        assert_eq!(e.line, 3);
        assert!(e.message.contains("reserved"), "{}", e.message);
    }

    #[test]
    fn reads_file_contents_by_location() {
        let list = b"file /a data.bin 600 1 2\n";
        let bytes = build_archive(list, |loc| {
            assert_eq!(loc, "data.bin");
            Ok(b"contents".to_vec())
        })
        .unwrap();
        let entries: Vec<_> = cpio::Archive::new(&bytes).entries().collect::<Result<_, _>>().unwrap();
        assert_eq!(entries.len(), 1);
        assert_eq!((entries[0].name, entries[0].data), ("a", &b"contents"[..]));
        assert_eq!((entries[0].uid, entries[0].gid), (1, 2));
    }
}
