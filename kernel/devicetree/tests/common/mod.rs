//! A small flattened-device-tree writer, to build trees that show one
//! thing each.

/// Builds a version 17 blob node by node, as dtc lays it out.
#[derive(Default)]
pub struct DtbBuilder {
    structure: Vec<u8>,
    strings: Vec<u8>,
    reservations: Vec<(u64, u64)>,
}

impl DtbBuilder {
    pub fn new() -> Self {
        Self::default()
    }

    fn token(&mut self, token: u32) {
        self.structure.extend_from_slice(&token.to_be_bytes());
    }

    fn pad(&mut self) {
        while !self.structure.len().is_multiple_of(4) {
            self.structure.push(0);
        }
    }

    /// Opens a node (the root is "").
    pub fn begin(&mut self, name: &str) -> &mut Self {
        self.token(1);
        self.structure.extend_from_slice(name.as_bytes());
        self.structure.push(0);
        self.pad();
        self
    }

    /// Closes the innermost open node.
    pub fn end(&mut self) -> &mut Self {
        self.token(2);
        self
    }

    /// A property with raw bytes.
    pub fn prop(&mut self, name: &str, value: &[u8]) -> &mut Self {
        let name_off = self.string_offset(name);
        self.token(3);
        self.structure.extend_from_slice(&(value.len() as u32).to_be_bytes());
        self.structure.extend_from_slice(&name_off.to_be_bytes());
        self.structure.extend_from_slice(value);
        self.pad();
        self
    }

    /// A property of 32-bit cells.
    pub fn cells(&mut self, name: &str, cells: &[u32]) -> &mut Self {
        let bytes: Vec<u8> = cells.iter().flat_map(|c| c.to_be_bytes()).collect();
        self.prop(name, &bytes)
    }

    /// A string property (NUL-separated for a list).
    pub fn string(&mut self, name: &str, value: &str) -> &mut Self {
        let mut bytes = value.as_bytes().to_vec();
        bytes.push(0);
        self.prop(name, &bytes)
    }

    /// A /memreserve/ entry.
    pub fn memreserve(&mut self, base: u64, size: u64) -> &mut Self {
        self.reservations.push((base, size));
        self
    }

    fn string_offset(&mut self, name: &str) -> u32 {
        let offset = self.strings.len() as u32;
        self.strings.extend_from_slice(name.as_bytes());
        self.strings.push(0);
        offset
    }

    /// The blob.
    pub fn build(&self) -> Vec<u8> {
        let mut rsv = Vec::new();
        for &(base, size) in self.reservations.iter().chain([&(0, 0)]) {
            rsv.extend_from_slice(&base.to_be_bytes());
            rsv.extend_from_slice(&size.to_be_bytes());
        }
        let mut structure = self.structure.clone();
        structure.extend_from_slice(&9u32.to_be_bytes());
        let off_rsv = 40;
        let off_struct = off_rsv + rsv.len();
        let off_strings = off_struct + structure.len();
        let total = off_strings + self.strings.len();
        let header = [
            0xd00d_feed,
            total as u32,
            off_struct as u32,
            off_strings as u32,
            off_rsv as u32,
            17,
            16,
            0,
            self.strings.len() as u32,
            structure.len() as u32,
        ];
        let mut blob: Vec<u8> = header.iter().flat_map(|w: &u32| w.to_be_bytes()).collect();
        blob.extend_from_slice(&rsv);
        blob.extend_from_slice(&structure);
        blob.extend_from_slice(&self.strings);
        blob
    }
}
