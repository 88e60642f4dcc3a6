//! Device nodes, the registry, the memory devices and devfs.

mod common;

use std::sync::Arc;

use common::*;
use uapi::fcntl::*;
use uapi::stat::*;
use uapi::termios::{Winsize, TIOCGWINSZ};
use vfs::devfs::devfs;
use vfs::device::CharDevice;
use vfs::{Errno, FileOps, OpenFile};

fn with_dev(w: &World) {
    w.mkdir("/dev");
    let dev = devfs(w.clock.clone()).unwrap();
    w.vfs.mount(dev, &w.lookup("/dev").unwrap()).unwrap();
}

#[test]
fn devfs_has_linux_nodes_and_modes() {
    let w = world();
    with_dev(&w);
    let stat = |p: &str| w.vfs.fstatat(&w.root, &w.cwd(), p.as_bytes(), 0).unwrap();
    let c = stat("/dev/console");
    assert_eq!(
        (c.mode, major(c.rdev), minor(c.rdev), c.uid),
        (S_IFCHR | 0o600, 5, 1, 0)
    );
    let n = stat("/dev/null");
    assert_eq!((n.mode, major(n.rdev), minor(n.rdev)), (S_IFCHR | 0o666, 1, 3));
    let z = stat("/dev/zero");
    assert_eq!((z.mode, major(z.rdev), minor(z.rdev)), (S_IFCHR | 0o666, 1, 5));
    let t = stat("/dev/tty");
    assert_eq!((t.mode, major(t.rdev), minor(t.rdev)), (S_IFCHR | 0o666, 5, 0));
    assert_eq!(list(&w, "/dev"), ["console", "full", "null", "tty", "zero"]);
}

#[test]
fn null_zero_and_full_behave_as_on_linux() {
    let w = world();
    with_dev(&w);
    let null = w.open("/dev/null", O_RDWR).unwrap();
    assert_eq!(null.read(&mut [1u8; 8]).unwrap(), 0);
    assert_eq!(null.write(b"gone").unwrap(), 4);
    assert_eq!(null.lseek(100, SEEK_SET).unwrap(), 0);
    let zero = w.open("/dev/zero", O_RDWR).unwrap();
    let mut buf = [1u8; 16];
    assert_eq!(zero.read(&mut buf).unwrap(), 16);
    assert_eq!(buf, [0u8; 16]);
    assert_eq!(zero.write(b"x").unwrap(), 1);
    let full = w.open("/dev/full", O_RDWR).unwrap();
    assert_eq!(full.write(b"x"), Err(Errno::ENOSPC));
    assert_eq!(full.read(&mut buf).unwrap(), 16);
    // Not a terminal.
    assert_eq!(null.ioctl(TIOCGWINSZ, 0), Err(Errno::ENOTTY));
    // An unprivileged user may use null but not the console.
    assert!(w.open_as(&user(), "/dev/null", O_WRONLY).is_ok());
    assert_eq!(w.open_as(&user(), "/dev/console", O_WRONLY).err(), Some(Errno::EACCES));
}

#[test]
fn a_node_without_a_driver_is_enxio() {
    let w = world();
    with_dev(&w);
    // The console's driver is the kernel's; this registry has none.
    assert_eq!(w.open("/dev/console", O_RDWR).err(), Some(Errno::ENXIO));
    w.vfs
        .mknodat(&w.root, &w.cwd(), b"/blk", S_IFBLK | 0o600, makedev(8, 0), 0)
        .unwrap();
    assert_eq!(w.open("/blk", O_RDONLY).err(), Some(Errno::ENXIO));
}

/// A pretend console: records writes, answers TIOCGWINSZ with a size.
struct Console {
    out: spin::Mutex<Vec<u8>>,
}

impl FileOps for Console {
    fn write(&self, _: &OpenFile, buf: &[u8], _: &mut u64) -> Result<usize, Errno> {
        self.out.lock().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn read(&self, _: &OpenFile, _: &mut [u8], _: &mut u64) -> Result<usize, Errno> {
        Err(Errno::EAGAIN)
    }

    fn llseek(&self, _: &OpenFile, _: u64, _: i64, _: u32, _: u64) -> Result<u64, Errno> {
        Err(Errno::ESPIPE)
    }

    fn ioctl(&self, _: &OpenFile, cmd: u32, _arg: u64) -> Result<i64, Errno> {
        match cmd {
            TIOCGWINSZ => Ok(Winsize {
                ws_row: 24,
                ws_col: 80,
                ..Default::default()
            }
            .ws_col as i64),
            _ => Err(Errno::ENOTTY),
        }
    }
}

impl CharDevice for Console {
    fn open(&self, flags: u32) -> Result<(), Errno> {
        if flags & O_EXCL != 0 {
            Err(Errno::EBUSY)
        } else {
            Ok(())
        }
    }
}

#[test]
fn kernel_drivers_answer_their_nodes() {
    let table = Arc::new(vfs::DeviceTable::with_mem_devices());
    let console = Arc::new(Console {
        out: spin::Mutex::new(Vec::new()),
    });
    table.register_chrdev(5, 1, console.clone());
    let clock = Arc::new(TickClock(Default::default()));
    let fs = vfs::ramfs::RamFs::new(clock.clone());
    let v = vfs::Vfs::new(fs, table);
    let root = vfs::Cred::root();
    v.mkdirat(&root, &v.root(), b"/dev", 0o755, 0).unwrap();
    v.mount(
        devfs(clock).unwrap(),
        &v.lookup(&root, &v.root(), b"/dev", true).unwrap(),
    )
    .unwrap();
    let f = v.openat(&root, &v.root(), b"/dev/console", O_RDWR, 0, 0).unwrap();
    f.write(b"hello\n").unwrap();
    assert_eq!(&*console.out.lock(), b"hello\n");
    assert_eq!(f.read(&mut [0u8; 4]), Err(Errno::EAGAIN));
    assert_eq!(f.lseek(0, SEEK_SET), Err(Errno::ESPIPE));
    assert_eq!(f.ioctl(TIOCGWINSZ, 0).unwrap(), 80);
    assert_eq!(f.metadata().mode & S_IFMT, S_IFCHR);
    assert_eq!(
        v.openat(&root, &v.root(), b"/dev/console", O_RDWR | O_EXCL, 0, 0).err(),
        Some(Errno::EBUSY)
    );
}

/// preadv2/pwritev2's RWF_* flags as Linux 6.12 takes them on each file
/// (what reflinux shows): /dev/null and /dev/zero have `read_iter`,
/// `write_iter` and FMODE_NOWAIT; /dev/full reads through `read_iter`
/// without FMODE_NOWAIT and writes through a plain `write`, which takes
/// only RWF_HIPRI; a ramfs file has both iter operations but not
/// FMODE_NOWAIT.
#[test]
fn rwf_flags_follow_each_files_iter_operations() {
    use uapi::uio::rwf::*;
    use vfs::file::RwFlags;
    let w = world();
    with_dev(&w);
    w.write("/f", b"data");
    let none = Ok(RwFlags::default());
    let nowait = Ok(RwFlags {
        nowait: true,
        append: None,
    });
    let append = Ok(RwFlags {
        nowait: false,
        append: Some(true),
    });
    let noappend = Ok(RwFlags {
        nowait: false,
        append: Some(false),
    });
    let unsupp = Err(Errno::EOPNOTSUPP);
    let inval = Err(Errno::EINVAL);
    // (file, write, [0, HIPRI, DSYNC, NOWAIT, APPEND, NOAPPEND, ATOMIC, 0x80, APPEND|NOAPPEND])
    let flags = [
        0,
        RWF_HIPRI,
        RWF_DSYNC,
        RWF_NOWAIT,
        RWF_APPEND,
        RWF_NOAPPEND,
        RWF_ATOMIC,
        0x80,
        RWF_APPEND | RWF_NOAPPEND,
    ];
    let iter_nowait = [none, none, none, nowait, append, noappend, unsupp, unsupp, inval];
    let iter = [none, none, none, unsupp, append, noappend, unsupp, unsupp, inval];
    let looped = [none, none, unsupp, unsupp, unsupp, unsupp, unsupp, unsupp, unsupp];
    for (path, write, want) in [
        ("/dev/null", false, iter_nowait),
        ("/dev/null", true, iter_nowait),
        ("/dev/zero", false, iter_nowait),
        ("/dev/zero", true, iter_nowait),
        ("/dev/full", false, iter),
        ("/dev/full", true, looped),
        ("/f", false, iter),
        ("/f", true, iter),
    ] {
        let f = w.open(path, O_RDWR).unwrap();
        for (fl, want) in flags.iter().zip(want) {
            assert_eq!(f.rw_flags(*fl, write), want, "{path} write={write} flags={fl:#x}");
        }
    }
}
