//! Shell-style pattern matching as Linux's `lib/glob.c` (`glob_match`,
//! `glob_match_len`): `?`, `*`, `[...]` classes with `!` for complement and
//! `a-b` ranges, `\` to quote. Nothing is special about `/` or a leading `.`;
//! an unterminated `[` matches itself. Linear in memory, at most
//! quadratic in time, never recursive: safe to run in probe context.

/// Does `pat` match all of `s`? `s` ends at its first NUL, if any.
pub fn glob_match(pat: &[u8], s: &[u8]) -> bool {
    glob_match_len(pat, s, s.len())
}

/// As [`glob_match`], reading at most `len` bytes of `s` (an event field
/// need not be NUL-terminated); a NUL within them ends the string.
/// The pattern ends at its first NUL or its end.
pub fn glob_match_len(pat: &[u8], s: &[u8], len: usize) -> bool {
    let end = len.min(s.len());
    // Reads as C would from NUL-terminated strings.
    let sc = |i: usize| if i < end { s.get(i).copied().unwrap_or(0) } else { 0 };
    let pc = |i: usize| pat.get(i).copied().unwrap_or(0);

    // Where to resume after a mismatch: the pattern just after the last `*`
    // and the string position that `*` currently stops before. One level of
    // backtracking is enough because `*` matches any character.
    let mut back: Option<(usize, usize)> = None;
    let mut p = 0usize;
    let mut i = 0usize;
    loop {
        let c = sc(i);
        let mut d = pc(p);
        p += 1;
        i += 1;
        // `true` when the token at `p` failed against `c`.
        let mismatch;
        match d {
            b'?' => {
                if c == 0 {
                    return false;
                }
                continue;
            }
            b'*' => {
                if pc(p) == 0 {
                    return true;
                }
                i -= 1;
                back = Some((p, i));
                continue;
            }
            b'[' if c != 0 => {
                match match_class(pat, p, c) {
                    ClassResult::Matched(next) => {
                        p = next;
                        continue;
                    }
                    ClassResult::NoMatch => mismatch = true,
                    // An unterminated class: `[` is an ordinary character.
                    ClassResult::Malformed => mismatch = c != b'[',
                }
            }
            b'[' => return false,
            _ => {
                if d == b'\\' {
                    d = pc(p);
                    p += 1;
                }
                if c == d {
                    if d == 0 {
                        return true;
                    }
                    continue;
                }
                mismatch = true;
            }
        }
        if !mismatch {
            continue;
        }
        match back {
            Some((bp, bs)) if c != 0 => {
                p = bp;
                back = Some((bp, bs + 1));
                i = bs + 1;
            }
            _ => return false,
        }
    }
}

enum ClassResult {
    /// The class matched; the pattern continues at this index.
    Matched(usize),
    NoMatch,
    /// No closing `]` (or a range running off the end).
    Malformed,
}

/// Matches `c` against the class whose body starts at `pat[start]` (just
/// after the `[`).
fn match_class(pat: &[u8], start: usize, c: u8) -> ClassResult {
    let pc = |i: usize| pat.get(i).copied().unwrap_or(0);
    let inverted = pc(start) == b'!';
    let mut k = start + usize::from(inverted);
    let mut a = pc(k);
    k += 1;
    let mut matched = false;
    // The first span may begin with `]`.
    loop {
        let mut b = a;
        if a == 0 {
            return ClassResult::Malformed;
        }
        if pc(k) == b'-' && pc(k + 1) != b']' {
            b = pc(k + 1);
            if b == 0 {
                return ClassResult::Malformed;
            }
            k += 2;
        }
        matched |= a <= c && c <= b;
        a = pc(k);
        k += 1;
        if a == b']' {
            break;
        }
    }
    if matched == inverted {
        ClassResult::NoMatch
    } else {
        ClassResult::Matched(k)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(p: &str, s: &str) -> bool {
        glob_match(p.as_bytes(), s.as_bytes())
    }

    #[test]
    fn literal_question_and_star() {
        assert!(m("abc", "abc"));
        assert!(!m("abc", "abcd"));
        assert!(!m("abcd", "abc"));
        assert!(m("a?c", "abc"));
        assert!(!m("a?c", "ac"));
        assert!(m("*", ""));
        assert!(m("a*", "a"));
        assert!(m("*c", "abc"));
        assert!(m("*b*", "abc"));
        assert!(!m("*x*", "abc"));
        assert!(m("a*b*c", "aXbYbZc"));
        assert!(m("*aaaaa", "aaaaaaaaaa"));
        assert!(!m("*aaaaab", "aaaaaaaaaa"));
    }

    #[test]
    fn classes_ranges_and_complement() {
        assert!(m("[abc]x", "bx"));
        assert!(!m("[abc]x", "dx"));
        assert!(m("[a-c]", "b"));
        assert!(!m("[!a-c]", "b"));
        assert!(m("[!a-c]", "z"));
        assert!(m("[]]", "]"));
        assert!(m("[a-]", "-"));
        assert!(!m("[a]", ""));
    }

    #[test]
    fn unterminated_class_matches_itself() {
        assert!(m("[a-", "[a-"));
        assert!(m("x[ab", "x[ab"));
        assert!(!m("[a-", "a"));
    }

    #[test]
    fn backslash_quotes() {
        assert!(m("a\\*", "a*"));
        assert!(!m("a\\*", "ab"));
    }

    #[test]
    fn len_bounds_and_nul_ends_string() {
        assert!(glob_match_len(b"ab", b"abXX", 2));
        assert!(!glob_match_len(b"abX", b"abXX", 2));
        assert!(glob_match(b"ab", b"ab\0cd"));
        assert!(glob_match_len(b"*b", b"ab\0\0", 4));
    }
}
