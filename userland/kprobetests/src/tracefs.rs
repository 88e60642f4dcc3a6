//! The tracefs files, by their Linux names, relative to the mount point
//! (`/sys/kernel/tracing`).
//!
//! Each write is one `write(2)` of the whole text, as `echo` does, so the
//! errno the kernel returns for a definition is the one the caller sees.

use alloc::format;
use alloc::vec::Vec;

use rt::fs;
use rt::Errno;

/// Where Linux mounts tracefs (and this kernel's init too).
pub const MOUNT: &str = "/sys/kernel/tracing";

/// The group kprobe events go to when the definition names none.
pub const GROUP: &str = "kprobes";

/// A tracefs mount.
pub struct Tracefs {
    root: &'static str,
}

/// Reads `fd` to the end.
pub fn read_fd(fd: i32) -> Result<Vec<u8>, Errno> {
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match fs::read(fd, &mut buf) {
            Ok(0) => return Ok(out),
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(Errno::EINTR) => {}
            Err(e) => return Err(e),
        }
    }
}

impl Tracefs {
    /// The tracefs at [`MOUNT`], if `kprobe_events` is there.
    pub fn find() -> Result<Tracefs, Errno> {
        let t = Tracefs { root: MOUNT };
        fs::stat(&t.path("kprobe_events"))?;
        Ok(t)
    }

    /// The absolute path of `rel`.
    pub fn path(&self, rel: &str) -> Vec<u8> {
        format!("{}/{rel}", self.root).into_bytes()
    }

    /// Opens `rel` with `flags` (`O_CLOEXEC` added).
    pub fn open(&self, rel: &str, flags: u32) -> Result<i32, Errno> {
        fs::open(&self.path(rel), flags | fs::O_CLOEXEC, 0)
    }

    /// The whole content of `rel`.
    pub fn read(&self, rel: &str) -> Result<Vec<u8>, Errno> {
        let fd = self.open(rel, fs::O_RDONLY)?;
        let r = read_fd(fd);
        let _ = fs::close(fd);
        r
    }

    /// The content of `rel` as text, trailing newline removed.
    pub fn read_text(&self, rel: &str) -> Result<alloc::string::String, Errno> {
        let b = self.read(rel)?;
        let s = alloc::string::String::from_utf8_lossy(&b).into_owned();
        Ok(s.trim_end_matches('\n').into())
    }

    fn write_flags(&self, rel: &str, data: &[u8], flags: u32) -> Result<(), Errno> {
        let fd = self.open(rel, fs::O_WRONLY | flags)?;
        let r = match fs::write(fd, data) {
            Ok(n) if n == data.len() => Ok(()),
            Ok(_) => Err(Errno::EIO),
            Err(e) => Err(e),
        };
        let _ = fs::close(fd);
        r
    }

    /// `echo DATA > rel`: opened with `O_TRUNC`, one write.
    pub fn write(&self, rel: &str, data: &str) -> Result<(), Errno> {
        let mut line = Vec::from(data.as_bytes());
        line.push(b'\n');
        self.write_flags(rel, &line, fs::O_TRUNC)
    }

    /// `echo DATA >> rel`: opened with `O_APPEND`, one write.
    pub fn append(&self, rel: &str, data: &str) -> Result<(), Errno> {
        let mut line = Vec::from(data.as_bytes());
        line.push(b'\n');
        self.write_flags(rel, &line, fs::O_APPEND)
    }

    /// Adds a probe definition to `kprobe_events`.
    pub fn define(&self, def: &str) -> Result<(), Errno> {
        self.append("kprobe_events", def)
    }

    /// Removes event `name` of group `kprobes` (`-:name`).
    pub fn remove(&self, name: &str) -> Result<(), Errno> {
        self.append("kprobe_events", &format!("-:{name}"))
    }

    /// `events/kprobes/NAME/enable`.
    pub fn enable(&self, name: &str, on: bool) -> Result<(), Errno> {
        self.write(&format!("events/{GROUP}/{name}/enable"), if on { "1" } else { "0" })
    }

    /// `events/kprobes/NAME/filter`.
    pub fn set_filter(&self, name: &str, filter: &str) -> Result<(), Errno> {
        self.write(&format!("events/{GROUP}/{name}/filter"), filter)
    }

    /// Empties the ring buffer (`echo > trace`), which also resets its
    /// overrun counters.
    pub fn clear_trace(&self) -> Result<(), Errno> {
        self.write("trace", "")
    }

    /// `tracing_on`.
    pub fn tracing_on(&self, on: bool) -> Result<(), Errno> {
        self.write("tracing_on", if on { "1" } else { "0" })
    }

    /// The online CPUs that have a `per_cpu/cpuN` directory, in order.
    pub fn cpus(&self) -> Result<Vec<usize>, Errno> {
        let fd = self.open("per_cpu", fs::O_RDONLY | fs::O_DIRECTORY)?;
        let mut cpus = Vec::new();
        let mut buf = [0u8; 2048];
        let r = loop {
            match fs::getdents64(fd, &mut buf) {
                Ok(0) => break Ok(()),
                Ok(n) => {
                    for e in fs::dirents(&buf[..n]) {
                        let num = e.name.strip_prefix(b"cpu").and_then(crate::parse::decimal);
                        if let Some(c) = num {
                            cpus.push(c as usize);
                        }
                    }
                }
                Err(Errno::EINTR) => {}
                Err(e) => break Err(e),
            }
        };
        let _ = fs::close(fd);
        r?;
        cpus.sort_unstable();
        Ok(cpus)
    }

    /// Puts tracing back as a fresh boot has it, as far as these programs
    /// touch it: every kprobe event disabled and removed, no filter left,
    /// `tracing_on` 1, the buffer at `buffer_kb` and empty, `error_log`
    /// empty. Returns the first error, after trying every step.
    pub fn reset(&self, buffer_kb: u64) -> Result<(), Errno> {
        let mut first = Ok(());
        let mut note = |r: Result<(), Errno>| {
            if first.is_ok() {
                first = r;
            }
        };
        // events/kprobes exists only while some kprobe event does.
        match self.write(&format!("events/{GROUP}/enable"), "0") {
            Err(Errno::ENOENT) => {}
            r => note(r),
        }
        note(self.write("kprobe_events", ""));
        note(self.tracing_on(true));
        note(self.write("buffer_size_kb", &format!("{buffer_kb}")));
        note(self.clear_trace());
        note(self.write("error_log", ""));
        first
    }
}
