//! What a filter can name: an event's own fields (from its schema), the
//! common fields every event has, and the pseudo fields `CPU`/`cpu`/
//! `common_cpu` and `COMM`/`comm` (plus `stacktrace`, which Linux defines
//! for hist triggers and which filters accept but never match), looked up in
//! that order as Linux's `trace_find_event_field()` does.

/// How a field's bytes are compared, from its C type as Linux's
/// `filter_assign_type()` decides.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldKind {
    /// A number of `size` 1, 2, 4 or 8 (other sizes never match).
    Integer,
    /// `char name[N]`: `size` bytes, NUL-terminated if shorter.
    StaticString,
    /// `__data_loc char[]`: a `u32` holding the string's offset in the
    /// record (low 16 bits) and its length with the NUL (high 16 bits).
    DynString,
    /// `__rel_loc char[]`: as [`FieldKind::DynString`], the offset counted
    /// from the end of the field itself.
    RelDynString,
    /// `char *` / `const char *`: a pointer the filter dereferences through
    /// [`crate::FilterContext::fetch_string`] (user memory with `.ustring`).
    PtrString,
}

impl FieldKind {
    /// The kind for a field of C type `ty` (as written in the `format`
    /// file), as Linux's `filter_assign_type()`.
    pub fn from_c_type(ty: &str) -> FieldKind {
        if ty.contains("__data_loc") && ty.contains("char") {
            return FieldKind::DynString;
        }
        if ty.contains("__rel_loc") && ty.contains("char") {
            return FieldKind::RelDynString;
        }
        if ty.contains('[') && ty.contains("char") {
            return FieldKind::StaticString;
        }
        if ty == "char *" || ty == "const char *" {
            return FieldKind::PtrString;
        }
        FieldKind::Integer
    }

    fn filter_type(self) -> FilterType {
        match self {
            FieldKind::Integer => FilterType::Other,
            FieldKind::StaticString => FilterType::StaticString,
            FieldKind::DynString => FilterType::DynString,
            FieldKind::RelDynString => FilterType::RelDynString,
            FieldKind::PtrString => FilterType::PtrString,
        }
    }
}

/// One field of an event's record, as its `format` file describes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EventField<'a> {
    /// The field's name (`prev_pid`, `fname`, ...).
    pub name: &'a str,
    /// Byte offset in the record.
    pub offset: u32,
    /// Size in bytes (4 for `__data_loc`).
    pub size: u32,
    /// Whether the number is signed (`signed:1` in `format`).
    pub is_signed: bool,
    /// How it is compared.
    pub kind: FieldKind,
}

/// The fields at the start of every record (Linux's `struct trace_entry`),
/// as every event's `format` file lists them first.
pub const COMMON_FIELDS: [EventField<'static>; 4] = [
    EventField {
        name: "common_type",
        offset: 0,
        size: 2,
        is_signed: false,
        kind: FieldKind::Integer,
    },
    EventField {
        name: "common_flags",
        offset: 2,
        size: 1,
        is_signed: false,
        kind: FieldKind::Integer,
    },
    EventField {
        name: "common_preempt_count",
        offset: 3,
        size: 1,
        is_signed: false,
        kind: FieldKind::Integer,
    },
    EventField {
        name: "common_pid",
        offset: 4,
        size: 4,
        is_signed: true,
        kind: FieldKind::Integer,
    },
];

/// Linux's `filter_type` of a field, including the pseudo fields' own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FilterType {
    Other,
    StaticString,
    DynString,
    RelDynString,
    PtrString,
    Comm,
    Cpu,
    Stacktrace,
}

impl FilterType {
    /// Linux's `is_string_field()`.
    pub(crate) fn is_string(self) -> bool {
        matches!(
            self,
            FilterType::StaticString
                | FilterType::DynString
                | FilterType::RelDynString
                | FilterType::PtrString
                | FilterType::Comm
        )
    }
}

/// A field as the filter compiler sees it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct FieldRef {
    pub offset: u32,
    pub size: u32,
    pub is_signed: bool,
    pub ftype: FilterType,
}

/// The pseudo fields: name and type (their size is 0, as in Linux).
const GENERIC_FIELDS: [(&str, FilterType, bool); 7] = [
    ("CPU", FilterType::Cpu, true),
    ("cpu", FilterType::Cpu, true),
    ("common_cpu", FilterType::Cpu, true),
    ("COMM", FilterType::Comm, false),
    ("comm", FilterType::Comm, false),
    ("stacktrace", FilterType::Stacktrace, false),
    ("STACKTRACE", FilterType::Stacktrace, false),
];

/// Linux's `trace_find_event_field()`: the event's fields, then the pseudo
/// fields, then the common fields.
pub(crate) fn find_field(fields: &[EventField<'_>], name: &[u8]) -> Option<FieldRef> {
    let of = |f: &EventField<'_>| FieldRef {
        offset: f.offset,
        size: f.size,
        is_signed: f.is_signed,
        ftype: f.kind.filter_type(),
    };
    if let Some(f) = fields.iter().find(|f| f.name.as_bytes() == name) {
        return Some(of(f));
    }
    if let Some(&(_, ftype, is_signed)) = GENERIC_FIELDS.iter().find(|g| g.0.as_bytes() == name) {
        return Some(FieldRef {
            offset: 0,
            size: 0,
            is_signed,
            ftype,
        });
    }
    COMMON_FIELDS.iter().find(|f| f.name.as_bytes() == name).map(of)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn c_types_map_as_filter_assign_type() {
        assert_eq!(FieldKind::from_c_type("__data_loc char[]"), FieldKind::DynString);
        assert_eq!(FieldKind::from_c_type("__rel_loc char[]"), FieldKind::RelDynString);
        assert_eq!(FieldKind::from_c_type("char prev_comm[16]"), FieldKind::StaticString);
        assert_eq!(FieldKind::from_c_type("char[16]"), FieldKind::StaticString);
        assert_eq!(FieldKind::from_c_type("const char *"), FieldKind::PtrString);
        assert_eq!(FieldKind::from_c_type("char *"), FieldKind::PtrString);
        assert_eq!(FieldKind::from_c_type("unsigned char"), FieldKind::Integer);
        assert_eq!(FieldKind::from_c_type("u64"), FieldKind::Integer);
    }

    #[test]
    fn event_fields_shadow_pseudo_and_common_fields() {
        let own = [EventField {
            name: "comm",
            offset: 8,
            size: 16,
            is_signed: false,
            kind: FieldKind::StaticString,
        }];
        let f = find_field(&own, b"comm").map(|f| (f.offset, f.ftype));
        assert_eq!(f, Some((8, FilterType::StaticString)));
        assert_eq!(find_field(&[], b"comm").map(|f| f.ftype), Some(FilterType::Comm));
        assert_eq!(find_field(&[], b"common_cpu").map(|f| f.ftype), Some(FilterType::Cpu));
        assert_eq!(
            find_field(&[], b"common_pid").map(|f| (f.offset, f.size, f.is_signed)),
            Some((4, 4, true))
        );
        assert!(find_field(&[], b"pid").is_none());
    }
}
