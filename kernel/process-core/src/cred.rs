//! Task credentials and Linux's rules for changing and comparing them
//! (`struct cred`; `kernel/sys.c`'s set*id calls, `kernel/groups.c`,
//! `kernel/capability.c`, `security/commoncap.c`'s capability fix-ups,
//! `commit_creds`' dumpable rule, `__ptrace_may_access` and
//! `kill_ok_by_cred`), in the initial user namespace: every ID but
//! `(uid_t)-1` is valid, and capabilities are checked in the effective set.
//!
//! A transition takes the old credentials and returns the new ones, or the
//! errno Linux gives; the kernel installs the result for the calling
//! thread alone (`commit_creds`), as Linux does.

use alloc::sync::Arc;
use uapi::capability::{CAP_FS_SET, CAP_SETGID, CAP_SETPCAP, CAP_SETUID, CAP_SYS_PTRACE, CAP_VALID_MASK};
use uapi::Errno;

/// `(uid_t)-1`: "leave this ID alone" to the set*id calls, and the one
/// value `make_kuid` refuses.
pub const NO_ID: u32 = u32::MAX;

/// A task's credentials (Linux's `struct cred`, less the keyrings, user
/// namespace and LSM parts).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cred {
    /// Real user ID.
    pub uid: u32,
    /// Effective user ID.
    pub euid: u32,
    /// Saved set-user-ID.
    pub suid: u32,
    /// Filesystem user ID (follows `euid` unless `setfsuid` moved it).
    pub fsuid: u32,
    /// Real group ID.
    pub gid: u32,
    /// Effective group ID.
    pub egid: u32,
    /// Saved set-group-ID.
    pub sgid: u32,
    /// Filesystem group ID.
    pub fsgid: u32,
    /// Supplementary groups, sorted (`groups_sort`), shared by copies.
    pub groups: Arc<[u32]>,
    /// Capabilities an exec may pass on (`cap_inheritable`).
    pub cap_inheritable: u64,
    /// Capabilities the task may make effective (`cap_permitted`).
    pub cap_permitted: u64,
    /// Capabilities checked now (`cap_effective`).
    pub cap_effective: u64,
    /// The bounding set (`cap_bset`).
    pub cap_bset: u64,
    /// Ambient capabilities (`cap_ambient`).
    pub cap_ambient: u64,
}

/// Which of the caller's IDs speak for it in a ptrace access check
/// (Linux's `PTRACE_MODE_REALCREDS`/`PTRACE_MODE_FSCREDS`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PtraceMode {
    /// Control (ptrace attach, process_vm_readv/writev): the caller's
    /// real IDs and permitted capabilities, as
    /// `PTRACE_MODE_ATTACH_REALCREDS`.
    AttachRealCreds,
    /// Control through a file (`/proc/PID/mem`): the caller's filesystem
    /// IDs and effective capabilities, as `PTRACE_MODE_ATTACH_FSCREDS`.
    AttachFsCreds,
}

/// The bit of capability `cap`.
const fn bit(cap: u32) -> u64 {
    1 << cap
}

/// Whether every capability of `a` is in `b` (`cap_issubset`).
const fn is_subset(a: u64, b: u64) -> bool {
    a & !b == 0
}

impl Cred {
    /// init's credentials (`init_cred`): root, every capability permitted,
    /// effective and in the bounding set, none inheritable or ambient.
    pub fn root() -> Cred {
        Cred {
            uid: 0,
            euid: 0,
            suid: 0,
            fsuid: 0,
            gid: 0,
            egid: 0,
            sgid: 0,
            fsgid: 0,
            groups: Arc::from([]),
            cap_inheritable: 0,
            cap_permitted: CAP_VALID_MASK,
            cap_effective: CAP_VALID_MASK,
            cap_bset: CAP_VALID_MASK,
            cap_ambient: 0,
        }
    }

    /// Whether `cap` is in the effective set (`capable`, `ns_capable`).
    pub fn capable(&self, cap: u32) -> bool {
        self.cap_effective & bit(cap) != 0
    }

    /// setuid(2) (`__sys_setuid`): with CAP_SETUID, real, effective, saved
    /// and filesystem IDs all become `uid`; without, only the effective
    /// (and filesystem) ID, and only to the real or saved one.
    pub fn setuid(&self, uid: u32) -> Result<Cred, Errno> {
        if uid == NO_ID {
            return Err(Errno::EINVAL);
        }
        let mut new = self.clone();
        if self.capable(CAP_SETUID) {
            new.uid = uid;
            new.suid = uid;
        } else if uid != self.uid && uid != self.suid {
            return Err(Errno::EPERM);
        }
        new.euid = uid;
        new.fsuid = uid;
        new.fix_setuid(self);
        Ok(new)
    }

    /// setreuid(2) (`__sys_setreuid`): the real ID may become the old real
    /// or effective one, the effective ID the old real, effective or saved
    /// one (anything with CAP_SETUID); the saved ID follows the new
    /// effective one when the real ID is set or the effective one leaves
    /// the old real one.
    pub fn setreuid(&self, ruid: u32, euid: u32) -> Result<Cred, Errno> {
        let mut new = self.clone();
        let cap = self.capable(CAP_SETUID);
        if ruid != NO_ID {
            new.uid = ruid;
            if ruid != self.uid && ruid != self.euid && !cap {
                return Err(Errno::EPERM);
            }
        }
        if euid != NO_ID {
            new.euid = euid;
            if euid != self.uid && euid != self.euid && euid != self.suid && !cap {
                return Err(Errno::EPERM);
            }
        }
        if ruid != NO_ID || (euid != NO_ID && euid != self.uid) {
            new.suid = new.euid;
        }
        new.fsuid = new.euid;
        new.fix_setuid(self);
        Ok(new)
    }

    /// setresuid(2) (`__sys_setresuid`): each ID not `-1` is set; without
    /// CAP_SETUID each must be one of the old real, effective or saved
    /// IDs. `Ok(None)` when nothing would change (Linux returns at once).
    pub fn setresuid(&self, ruid: u32, euid: u32, suid: u32) -> Result<Option<Cred>, Errno> {
        if (ruid == NO_ID || ruid == self.uid)
            && (euid == NO_ID || (euid == self.euid && euid == self.fsuid))
            && (suid == NO_ID || suid == self.suid)
        {
            return Ok(None);
        }
        let old = [self.uid, self.euid, self.suid];
        let is_new = |id: u32| id != NO_ID && !old.contains(&id);
        if (is_new(ruid) || is_new(euid) || is_new(suid)) && !self.capable(CAP_SETUID) {
            return Err(Errno::EPERM);
        }
        let mut new = self.clone();
        if ruid != NO_ID {
            new.uid = ruid;
        }
        if euid != NO_ID {
            new.euid = euid;
        }
        if suid != NO_ID {
            new.suid = suid;
        }
        new.fsuid = new.euid;
        new.fix_setuid(self);
        Ok(Some(new))
    }

    /// setfsuid(2) (`__sys_setfsuid`): the old filesystem ID, always, and
    /// the new credentials when the change is allowed (one of the old
    /// real, effective, saved or filesystem IDs, or CAP_SETUID) and is a
    /// change.
    pub fn setfsuid(&self, uid: u32) -> (u32, Option<Cred>) {
        let allowed = [self.uid, self.euid, self.suid, self.fsuid].contains(&uid) || self.capable(CAP_SETUID);
        if uid == NO_ID || !allowed || uid == self.fsuid {
            return (self.fsuid, None);
        }
        let mut new = self.clone();
        new.fsuid = uid;
        // cap_task_fix_setuid's LSM_SETID_FS case: the filesystem
        // capabilities follow fsuid out of and back into 0.
        if self.fsuid == 0 {
            new.cap_effective &= !CAP_FS_SET;
        } else if uid == 0 {
            new.cap_effective |= new.cap_permitted & CAP_FS_SET;
        }
        (self.fsuid, Some(new))
    }

    /// setgid(2) (`__sys_setgid`), as `setuid` with CAP_SETGID.
    pub fn setgid(&self, gid: u32) -> Result<Cred, Errno> {
        if gid == NO_ID {
            return Err(Errno::EINVAL);
        }
        let mut new = self.clone();
        if self.capable(CAP_SETGID) {
            new.gid = gid;
            new.sgid = gid;
        } else if gid != self.gid && gid != self.sgid {
            return Err(Errno::EPERM);
        }
        new.egid = gid;
        new.fsgid = gid;
        Ok(new)
    }

    /// setregid(2) (`__sys_setregid`), as `setreuid` with CAP_SETGID.
    pub fn setregid(&self, rgid: u32, egid: u32) -> Result<Cred, Errno> {
        let mut new = self.clone();
        let cap = self.capable(CAP_SETGID);
        if rgid != NO_ID {
            if rgid != self.gid && rgid != self.egid && !cap {
                return Err(Errno::EPERM);
            }
            new.gid = rgid;
        }
        if egid != NO_ID {
            if egid != self.gid && egid != self.egid && egid != self.sgid && !cap {
                return Err(Errno::EPERM);
            }
            new.egid = egid;
        }
        if rgid != NO_ID || (egid != NO_ID && egid != self.gid) {
            new.sgid = new.egid;
        }
        new.fsgid = new.egid;
        Ok(new)
    }

    /// setresgid(2) (`__sys_setresgid`), as `setresuid` with CAP_SETGID.
    pub fn setresgid(&self, rgid: u32, egid: u32, sgid: u32) -> Result<Option<Cred>, Errno> {
        if (rgid == NO_ID || rgid == self.gid)
            && (egid == NO_ID || (egid == self.egid && egid == self.fsgid))
            && (sgid == NO_ID || sgid == self.sgid)
        {
            return Ok(None);
        }
        let old = [self.gid, self.egid, self.sgid];
        let is_new = |id: u32| id != NO_ID && !old.contains(&id);
        if (is_new(rgid) || is_new(egid) || is_new(sgid)) && !self.capable(CAP_SETGID) {
            return Err(Errno::EPERM);
        }
        let mut new = self.clone();
        if rgid != NO_ID {
            new.gid = rgid;
        }
        if egid != NO_ID {
            new.egid = egid;
        }
        if sgid != NO_ID {
            new.sgid = sgid;
        }
        new.fsgid = new.egid;
        Ok(Some(new))
    }

    /// setfsgid(2) (`__sys_setfsgid`), as `setfsuid` with CAP_SETGID and
    /// no capability fix-up.
    pub fn setfsgid(&self, gid: u32) -> (u32, Option<Cred>) {
        let allowed = [self.gid, self.egid, self.sgid, self.fsgid].contains(&gid) || self.capable(CAP_SETGID);
        if gid == NO_ID || !allowed || gid == self.fsgid {
            return (self.fsgid, None);
        }
        let mut new = self.clone();
        new.fsgid = gid;
        (self.fsgid, Some(new))
    }

    /// setgroups(2) (`may_setgroups`, `groups_from_user`, `groups_sort`):
    /// EPERM without CAP_SETGID, EINVAL for `(gid_t)-1`; the list is kept
    /// sorted. The caller checks the count against `NGROUPS_MAX` first.
    pub fn setgroups(&self, mut groups: alloc::vec::Vec<u32>) -> Result<Cred, Errno> {
        if !self.capable(CAP_SETGID) {
            return Err(Errno::EPERM);
        }
        if groups.contains(&NO_ID) {
            return Err(Errno::EINVAL);
        }
        groups.sort_unstable();
        Ok(Cred {
            groups: Arc::from(groups),
            ..self.clone()
        })
    }

    /// Whether `gid` is the effective group or a supplementary one
    /// (`in_egroup_p`).
    pub fn in_egroup(&self, gid: u32) -> bool {
        gid == self.egid || self.groups.binary_search(&gid).is_ok()
    }

    /// capset(2) on the caller (`cap_capset`): the new inheritable set may
    /// hold only old inheritable or permitted capabilities (any, with
    /// CAP_SETPCAP) and only bounding-set ones; the permitted set may only
    /// shrink; the effective set must lie in the new permitted one. The
    /// sets are masked to the capabilities Linux knows first. Ambient
    /// capabilities no longer both permitted and inheritable go.
    pub fn capset(&self, effective: u64, permitted: u64, inheritable: u64) -> Result<Cred, Errno> {
        let (e, p, i) = (
            effective & CAP_VALID_MASK,
            permitted & CAP_VALID_MASK,
            inheritable & CAP_VALID_MASK,
        );
        if !self.capable(CAP_SETPCAP) && !is_subset(i, self.cap_inheritable | self.cap_permitted) {
            return Err(Errno::EPERM);
        }
        if !is_subset(i, self.cap_inheritable | self.cap_bset) {
            return Err(Errno::EPERM);
        }
        if !is_subset(p, self.cap_permitted) || !is_subset(e, p) {
            return Err(Errno::EPERM);
        }
        Ok(Cred {
            cap_effective: e,
            cap_permitted: p,
            cap_inheritable: i,
            cap_ambient: self.cap_ambient & p & i,
            ..self.clone()
        })
    }

    /// The credentials an exec gives (`cap_bprm_creds_from_file` for a
    /// file without set-ID bits or file capabilities, the only kind this
    /// kernel runs): IDs unchanged but saved and filesystem IDs reset to
    /// the effective ones; a real or effective root gets the bounding and
    /// inheritable sets as permitted, effective only if the effective ID
    /// is 0; anyone else keeps only the ambient set.
    pub fn for_exec(&self) -> Cred {
        let mut new = self.clone();
        new.cap_permitted = 0;
        let mut effective = false;
        if self.euid == 0 || self.uid == 0 {
            new.cap_permitted = self.cap_bset | self.cap_inheritable;
            effective = self.euid == 0;
        }
        new.suid = new.euid;
        new.fsuid = new.euid;
        new.sgid = new.egid;
        new.fsgid = new.egid;
        new.cap_permitted |= new.cap_ambient;
        new.cap_effective = if effective { new.cap_permitted } else { new.cap_ambient };
        new
    }

    /// Whether an exec leaves the address space dumpable by its owner
    /// (`begin_new_exec`: only if the effective IDs equal the real ones).
    pub fn exec_dumpable(&self) -> bool {
        self.euid == self.uid && self.egid == self.gid
    }

    /// `cap_emulate_setxuid`, run by every set*uid call but setfsuid
    /// (`cap_task_fix_setuid`): leaving uid 0 in all three of real,
    /// effective and saved IDs clears the permitted, effective and ambient
    /// sets; the effective ID leaving 0 clears the effective set; returning
    /// to 0 makes it the permitted set again.
    fn fix_setuid(&mut self, old: &Cred) {
        let had_root = old.uid == 0 || old.euid == 0 || old.suid == 0;
        let has_root = self.uid == 0 || self.euid == 0 || self.suid == 0;
        if had_root && !has_root {
            self.cap_permitted = 0;
            self.cap_effective = 0;
            self.cap_ambient = 0;
        }
        if old.euid == 0 && self.euid != 0 {
            self.cap_effective = 0;
        }
        if old.euid != 0 && self.euid == 0 {
            self.cap_effective = self.cap_permitted;
        }
    }
}

/// Whether installing `new` over `old` makes the address space
/// undumpable (`commit_creds`): an effective or filesystem ID changed, or
/// the permitted capabilities grew.
pub fn commit_resets_dumpable(old: &Cred, new: &Cred) -> bool {
    old.euid != new.euid
        || old.egid != new.egid
        || old.fsuid != new.fsuid
        || old.fsgid != new.fsgid
        || !is_subset(new.cap_permitted, old.cap_permitted)
}

/// The credentials part of `__ptrace_may_access` and commoncap's
/// `cap_ptrace_access_check`: the caller's real (or filesystem) user and
/// group must equal each of the target's real, effective and saved ones
/// and its permitted (or effective) capabilities must cover the target's
/// permitted ones, unless it holds CAP_SYS_PTRACE.
pub fn ptrace_creds_allow(cred: &Cred, tcred: &Cred, mode: PtraceMode) -> bool {
    PtraceSubject::of(cred, mode).allows(tcred)
}

/// What of a caller's credentials `ptrace_creds_allow` reads, copied out
/// so that the caller's credentials need not stay held (nor referenced)
/// while the target's are read.
#[derive(Clone, Copy, Debug)]
pub struct PtraceSubject {
    /// Holds CAP_SYS_PTRACE (effective): passes every check.
    pub sys_ptrace: bool,
    uid: u32,
    gid: u32,
    caps: u64,
}

impl PtraceSubject {
    /// The caller with `cred` checking in `mode`.
    pub fn of(cred: &Cred, mode: PtraceMode) -> PtraceSubject {
        let (uid, gid, caps) = match mode {
            PtraceMode::AttachRealCreds => (cred.uid, cred.gid, cred.cap_permitted),
            PtraceMode::AttachFsCreds => (cred.fsuid, cred.fsgid, cred.cap_effective),
        };
        PtraceSubject {
            sys_ptrace: cred.capable(CAP_SYS_PTRACE),
            uid,
            gid,
            caps,
        }
    }

    /// `ptrace_creds_allow` of this caller on a target with `tcred`.
    pub fn allows(&self, tcred: &Cred) -> bool {
        self.sys_ptrace
            || ([tcred.euid, tcred.suid, tcred.uid].iter().all(|&u| u == self.uid)
                && [tcred.egid, tcred.sgid, tcred.gid].iter().all(|&g| g == self.gid)
                && is_subset(tcred.cap_permitted, self.caps))
    }
}

/// Whether a caller with `cred` may signal a task with `tcred`
/// (`kill_ok_by_cred`): its real or effective user ID equals the target's
/// real or saved one, or it holds CAP_KILL.
pub fn kill_ok_by_cred(cred: &Cred, tcred: &Cred) -> bool {
    let mine = [cred.euid, cred.uid];
    mine.contains(&tcred.suid) || mine.contains(&tcred.uid) || cred.capable(uapi::capability::CAP_KILL)
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use alloc::vec;

    /// A user's credentials: `uid`/`gid` in every slot, no capability.
    fn user(uid: u32, gid: u32) -> Cred {
        Cred {
            uid,
            euid: uid,
            suid: uid,
            fsuid: uid,
            gid,
            egid: gid,
            sgid: gid,
            fsgid: gid,
            cap_permitted: 0,
            cap_effective: 0,
            ..Cred::root()
        }
    }

    fn ids(c: &Cred) -> [u32; 4] {
        [c.uid, c.euid, c.suid, c.fsuid]
    }

    fn gids(c: &Cred) -> [u32; 4] {
        [c.gid, c.egid, c.sgid, c.fsgid]
    }

    #[test]
    fn root_setuid_sets_every_id_and_drops_every_capability() {
        let c = Cred::root().setuid(1000).unwrap();
        assert_eq!(ids(&c), [1000; 4]);
        assert_eq!((c.cap_permitted, c.cap_effective, c.cap_ambient), (0, 0, 0));
        assert_eq!(c.cap_bset, CAP_VALID_MASK, "the bounding set stays");
        // And there is no way back.
        assert_eq!(c.setuid(0), Err(Errno::EPERM));
        assert_eq!(c.setresuid(0, 0, 0), Err(Errno::EPERM));
        assert_eq!(Cred::root().setuid(NO_ID), Err(Errno::EINVAL));
    }

    #[test]
    fn unprivileged_setuid_moves_only_the_effective_id_to_the_real_or_saved_one() {
        // A set-user-ID-like state: real 1000, effective and saved 2000.
        let c = Cred {
            euid: 2000,
            suid: 2000,
            fsuid: 2000,
            ..user(1000, 100)
        };
        let to_real = c.setuid(1000).unwrap();
        assert_eq!(ids(&to_real), [1000, 1000, 2000, 1000]);
        assert_eq!(ids(&to_real.setuid(2000).unwrap()), [1000, 2000, 2000, 2000]);
        assert_eq!(c.setuid(3000), Err(Errno::EPERM));
    }

    #[test]
    fn seteuid_away_from_root_keeps_the_permitted_set_and_returns() {
        // glibc's seteuid(1000) is setresuid(-1, 1000, -1).
        let c = Cred::root().setresuid(NO_ID, 1000, NO_ID).unwrap().unwrap();
        assert_eq!(ids(&c), [0, 1000, 0, 1000]);
        assert_eq!(c.cap_effective, 0);
        assert_eq!(c.cap_permitted, CAP_VALID_MASK, "real and saved uid are still 0");
        let back = c.setresuid(NO_ID, 0, NO_ID).unwrap().unwrap();
        assert_eq!(back.cap_effective, CAP_VALID_MASK);
        assert_eq!(ids(&back), [0; 4]);
    }

    #[test]
    fn setresuid_to_the_same_ids_is_a_noop_even_unprivileged() {
        let c = user(1000, 100);
        assert_eq!(c.setresuid(1000, 1000, 1000), Ok(None));
        assert_eq!(c.setresuid(NO_ID, NO_ID, NO_ID), Ok(None));
        assert_eq!(c.setresuid(1000, 1001, NO_ID), Err(Errno::EPERM));
        // A permutation of the old IDs is allowed without a capability.
        let c = Cred { suid: 2000, ..c };
        let p = c.setresuid(2000, 1000, 1000).unwrap().unwrap();
        assert_eq!(ids(&p), [2000, 1000, 1000, 1000]);
    }

    #[test]
    fn setreuid_sets_the_saved_id_as_linux_does() {
        let c = Cred {
            euid: 2000,
            suid: 2000,
            fsuid: 2000,
            ..user(1000, 100)
        };
        // Swapping real and effective: saved follows the new effective.
        assert_eq!(ids(&c.setreuid(2000, 1000).unwrap()), [2000, 1000, 1000, 1000]);
        // Effective back to the real one only: saved stays.
        assert_eq!(ids(&c.setreuid(NO_ID, 1000).unwrap()), [1000, 1000, 2000, 1000]);
        // The real ID may not become the saved one.
        let d = Cred {
            euid: 1000,
            fsuid: 1000,
            ..c.clone()
        };
        assert_eq!(d.setreuid(2000, NO_ID), Err(Errno::EPERM));
        assert_eq!(d.setreuid(NO_ID, 2000).map(|c| ids(&c)), Ok([1000, 2000, 2000, 2000]));
        assert_eq!(c.setreuid(NO_ID, 3000), Err(Errno::EPERM));
    }

    #[test]
    fn setfsuid_returns_the_old_id_and_moves_the_fs_capabilities() {
        let (old, c) = Cred::root().setfsuid(1000);
        let c = c.unwrap();
        assert_eq!(old, 0);
        assert_eq!(ids(&c), [0, 0, 0, 1000]);
        assert_eq!(c.cap_effective, CAP_VALID_MASK & !CAP_FS_SET);
        let (old, back) = c.setfsuid(0);
        assert_eq!((old, back.unwrap().cap_effective), (1000, CAP_VALID_MASK));
        // Refused or unchanged: the old ID and no new credentials.
        assert_eq!(user(1000, 100).setfsuid(0), (1000, None));
        assert_eq!(user(1000, 100).setfsuid(1000), (1000, None));
        assert_eq!(Cred::root().setfsuid(NO_ID), (0, None));
    }

    #[test]
    fn group_ids_follow_the_same_rules_under_cap_setgid() {
        let c = Cred::root().setgid(100).unwrap();
        assert_eq!(gids(&c), [100; 4]);
        assert_eq!(c.cap_effective, CAP_VALID_MASK, "gids leave capabilities alone");
        let u = user(1000, 100);
        assert_eq!(u.setgid(0), Err(Errno::EPERM));
        assert_eq!(u.setregid(NO_ID, 0), Err(Errno::EPERM));
        assert_eq!(u.setresgid(100, 100, 100), Ok(None));
        assert_eq!(u.setresgid(0, NO_ID, NO_ID), Err(Errno::EPERM));
        assert_eq!(u.setfsgid(0), (100, None));
        let r = Cred::root().setresgid(1, 2, 3).unwrap().unwrap();
        assert_eq!(gids(&r), [1, 2, 3, 2]);
        assert_eq!(gids(&r.setregid(2, NO_ID).unwrap()), [2, 2, 2, 2]);
        assert_eq!(Cred::root().setgid(NO_ID), Err(Errno::EINVAL));
    }

    #[test]
    fn setgroups_needs_cap_setgid_and_sorts() {
        let c = Cred::root().setgroups(vec![30, 10, 20]).unwrap();
        assert_eq!(&*c.groups, &[10, 20, 30]);
        assert!(c.in_egroup(20) && c.in_egroup(0) && !c.in_egroup(40));
        assert_eq!(Cred::root().setgroups(vec![1, NO_ID]), Err(Errno::EINVAL));
        assert_eq!(user(1000, 100).setgroups(vec![]), Err(Errno::EPERM));
    }

    #[test]
    fn capset_only_shrinks_permitted_and_keeps_effective_within_it() {
        let r = Cred::root();
        let fewer = r
            .capset(bit(CAP_SYS_PTRACE), bit(CAP_SYS_PTRACE) | bit(CAP_SETUID), 0)
            .unwrap();
        assert_eq!(fewer.cap_permitted, bit(CAP_SYS_PTRACE) | bit(CAP_SETUID));
        assert_eq!(
            fewer.capset(0, CAP_VALID_MASK, 0),
            Err(Errno::EPERM),
            "permitted may not grow"
        );
        assert_eq!(
            r.capset(CAP_VALID_MASK, 0, 0),
            Err(Errno::EPERM),
            "effective outside permitted"
        );
        // Inheritable: only old permitted or inheritable ones without CAP_SETPCAP.
        assert_eq!(fewer.capset(0, 0, bit(CAP_SETGID)), Err(Errno::EPERM));
        assert!(fewer.capset(0, 0, bit(CAP_SETUID)).is_ok());
        // Unknown bits are ignored, as Linux masks them.
        assert_eq!(r.capset(u64::MAX, u64::MAX, 0).unwrap().cap_effective, CAP_VALID_MASK);
    }

    #[test]
    fn exec_keeps_ids_resets_saved_and_recomputes_capabilities() {
        let u = Cred {
            suid: 2000,
            fsuid: 3000,
            ..user(1000, 100)
        };
        let e = u.for_exec();
        assert_eq!(ids(&e), [1000; 4]);
        assert_eq!((e.cap_permitted, e.cap_effective), (0, 0));
        // Root keeps everything; a real-only root keeps permitted, not effective.
        assert_eq!(Cred::root().for_exec(), Cred::root());
        let half = Cred::root().setresuid(NO_ID, 1000, NO_ID).unwrap().unwrap().for_exec();
        assert_eq!((half.cap_permitted, half.cap_effective), (CAP_VALID_MASK, 0));
        assert_eq!(ids(&half), [0, 1000, 1000, 1000]);
        assert!(!half.exec_dumpable() && u.exec_dumpable());
        // A root that dropped capabilities regains them at exec.
        let dropped = Cred::root().capset(0, 0, 0).unwrap();
        assert_eq!(dropped.for_exec().cap_effective, CAP_VALID_MASK);
    }

    #[test]
    fn a_credential_change_resets_dumpable_as_commit_creds_does() {
        let r = Cred::root();
        assert!(commit_resets_dumpable(&r, &r.setuid(1000).unwrap()));
        assert!(commit_resets_dumpable(&r, &r.setfsgid(5).1.unwrap()));
        // Only the real ID changes: still dumpable.
        let u = Cred { uid: 5, ..r.clone() };
        assert!(!commit_resets_dumpable(&r, &u));
        assert!(!commit_resets_dumpable(&r, &r.setgroups(vec![4]).unwrap()));
        assert!(
            !commit_resets_dumpable(&r, &r.capset(0, 0, 0).unwrap()),
            "capabilities shrank"
        );
    }

    /// Linux's __ptrace_may_access credential rule: the caller's real (or
    /// filesystem) IDs must equal all of the target's real, effective and
    /// saved IDs, unless it holds CAP_SYS_PTRACE.
    #[test]
    fn ptrace_access_needs_all_the_targets_ids_or_cap_sys_ptrace() {
        let (a, b) = (user(1000, 100), user(1001, 100));
        for mode in [PtraceMode::AttachRealCreds, PtraceMode::AttachFsCreds] {
            assert!(ptrace_creds_allow(&a, &a, mode), "same user");
            assert!(!ptrace_creds_allow(&a, &b, mode), "another user");
            assert!(!ptrace_creds_allow(&a, &Cred::root(), mode), "a user on root");
            assert!(
                ptrace_creds_allow(&Cred::root(), &a, mode),
                "root (CAP_SYS_PTRACE) on a user"
            );
            assert!(!ptrace_creds_allow(&a, &user(1000, 101), mode), "another group");
            assert!(
                !ptrace_creds_allow(&a, &Cred { suid: 0, ..a.clone() }, mode),
                "saved uid 0"
            );
            assert!(
                !ptrace_creds_allow(&a, &Cred { egid: 0, ..a.clone() }, mode),
                "effective gid 0"
            );
            // Same IDs but more capabilities (cap_ptrace_access_check).
            let capped = Cred {
                cap_permitted: bit(CAP_SETUID),
                ..a.clone()
            };
            assert!(!ptrace_creds_allow(&a, &capped, mode));
        }
        let fs_other = Cred {
            fsuid: 1001,
            ..a.clone()
        };
        assert!(ptrace_creds_allow(&fs_other, &a, PtraceMode::AttachRealCreds));
        assert!(!ptrace_creds_allow(&fs_other, &a, PtraceMode::AttachFsCreds));
        // A root that dropped CAP_SYS_PTRACE is an ordinary user of uid 0.
        let weak_root = Cred::root().capset(0, 0, 0).unwrap();
        assert!(!ptrace_creds_allow(&weak_root, &a, PtraceMode::AttachRealCreds));
    }

    #[test]
    fn kill_needs_a_matching_real_or_saved_target_id_or_cap_kill() {
        let (a, b) = (user(1000, 100), user(1001, 100));
        assert!(kill_ok_by_cred(&a, &a));
        assert!(!kill_ok_by_cred(&a, &b));
        assert!(kill_ok_by_cred(&Cred::root(), &b));
        assert!(!kill_ok_by_cred(&a, &Cred::root()));
        // The target's effective ID does not count; its saved one does.
        assert!(!kill_ok_by_cred(
            &a,
            &Cred {
                euid: 1000,
                ..b.clone()
            }
        ));
        assert!(kill_ok_by_cred(
            &a,
            &Cred {
                suid: 1000,
                ..b.clone()
            }
        ));
        // The caller's effective ID counts.
        assert!(kill_ok_by_cred(
            &Cred {
                euid: 1001,
                ..a.clone()
            },
            &b
        ));
    }
}
