//! Attribute sets as selectors read them: the [`AttrLookup`] trait, and [`PackedAttrs`], the
//! compact form the watch cache keeps for every object.
//!
//! A `BTreeMap<String, String>` with the two default fields costs a B-tree node (about 540
//! bytes, room for eleven entries) plus one allocation per string; with 100k cached objects
//! that was more memory than the objects themselves. [`PackedAttrs`] is one allocation holding
//! the pairs back to back.

use std::collections::BTreeMap;

/// Reads an attribute (a label or a field) by name.
pub trait AttrLookup {
    /// The value of `key`, if present.
    fn lookup(&self, key: &str) -> Option<&str>;
}

impl AttrLookup for BTreeMap<String, String> {
    fn lookup(&self, key: &str) -> Option<&str> {
        self.get(key).map(String::as_str)
    }
}

/// Key-value pairs in one boxed buffer: each string as a little-endian `u32` length and its
/// bytes, key then value. Lookups scan the pairs, which is quick for the handful an object
/// has. Empty sets allocate nothing.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PackedAttrs(Box<[u8]>);

impl PackedAttrs {
    /// Packs `pairs` (a later duplicate of a key is never found, as the first one wins).
    pub fn pack<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> Self {
        let mut buf = Vec::new();
        for (key, value) in pairs {
            for s in [key, value] {
                // Attribute strings come from one object of at most a few MiB.
                let len = u32::try_from(s.len()).unwrap_or(u32::MAX);
                buf.extend_from_slice(&len.to_le_bytes());
                buf.extend_from_slice(&s.as_bytes()[..len as usize]);
            }
        }
        PackedAttrs(buf.into_boxed_slice())
    }

    /// The pairs in packing order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        let mut rest: &[u8] = &self.0;
        std::iter::from_fn(move || {
            let key = take(&mut rest)?;
            let value = take(&mut rest)?;
            Some((key, value))
        })
    }
}

/// Reads one length-prefixed string off the front of `rest`.
fn take<'a>(rest: &mut &'a [u8]) -> Option<&'a str> {
    let (len, tail) = rest.split_first_chunk::<4>()?;
    let len = u32::from_le_bytes(*len) as usize;
    let (text, tail) = tail.split_at_checked(len)?;
    *rest = tail;
    // Only `pack` writes the buffer, from `str`s cut at their full length.
    std::str::from_utf8(text).ok()
}

impl AttrLookup for PackedAttrs {
    fn lookup(&self, key: &str) -> Option<&str> {
        self.iter().find(|(k, _)| *k == key).map(|(_, v)| v)
    }
}

impl From<&BTreeMap<String, String>> for PackedAttrs {
    fn from(map: &BTreeMap<String, String>) -> Self {
        PackedAttrs::pack(map.iter().map(|(k, v)| (k.as_str(), v.as_str())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packs_and_finds_pairs_including_empty_strings() {
        let packed = PackedAttrs::pack([
            ("metadata.name", "a"),
            ("metadata.namespace", ""),
            ("héllo", "wörld"),
        ]);
        assert_eq!(packed.lookup("metadata.name"), Some("a"));
        assert_eq!(packed.lookup("metadata.namespace"), Some(""));
        assert_eq!(packed.lookup("héllo"), Some("wörld"));
        assert_eq!(packed.lookup("metadata"), None);
        assert_eq!(packed.iter().count(), 3);
    }

    #[test]
    fn empty_set_allocates_nothing_and_matches_the_map_form() {
        let empty = PackedAttrs::default();
        assert_eq!(empty.0.len(), 0);
        assert_eq!(empty.lookup("x"), None);
        let map: BTreeMap<String, String> = [("app".to_string(), "web".to_string())]
            .into_iter()
            .collect();
        let packed = PackedAttrs::from(&map);
        assert_eq!(packed.lookup("app"), map.lookup("app"));
    }
}
