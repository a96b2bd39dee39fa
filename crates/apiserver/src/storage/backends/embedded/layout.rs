//! The redb layout of the embedded backend, chosen so that reads at a revision, watch replay
//! from a revision and compaction are all range scans:
//!
//! * `history: (key, mod_rev) -> record`: every version of every key, a tombstone for deletes;
//!   "key K as of revision R" is the last entry of the range `(K, 0)..=(K, R)`.
//! * `latest: key -> mod_rev`: the live keys and the revision of their current version.
//! * `by_rev: rev -> key`: which key each revision changed; watch replay scans it.
//! * `meta`: `rev` (the current revision) and `compact` (the compacted revision).
//! * `leases: key -> expiry`: the keys written with a time to live and when they expire
//!   (milliseconds since the Unix epoch); the writer deletes them then, as etcd revokes a lease.

use redb::{ReadableTable, TableDefinition};

use crate::storage::StorageError;

/// Every version of every key.
pub const HISTORY: TableDefinition<(&str, u64), &[u8]> = TableDefinition::new("history");
/// Live keys and their current revision.
pub const LATEST: TableDefinition<&str, u64> = TableDefinition::new("latest");
/// The key changed by each revision.
pub const BY_REV: TableDefinition<u64, &str> = TableDefinition::new("by_rev");
/// Keys with a time to live and their expiry (milliseconds since the Unix epoch).
pub const LEASES: TableDefinition<&str, u64> = TableDefinition::new("leases");
/// Counters.
pub const META: TableDefinition<&str, u64> = TableDefinition::new("meta");

/// `meta` key of the current revision.
pub const META_REV: &str = "rev";
/// `meta` key of the compacted revision.
pub const META_COMPACT: &str = "compact";

const TAG_PUT: u8 = 0;
const TAG_TOMBSTONE: u8 = 1;

/// A decoded `history` record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    /// The revision that created this incarnation of the key.
    pub create_rev: u64,
    /// The stored value; `None` for a tombstone.
    pub value: Option<Vec<u8>>,
}

impl Record {
    /// Encodes as `tag, create_rev (big endian), value`.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        Record::encode_into(self.create_rev, self.value.as_deref(), &mut out);
        out
    }

    /// Encodes a record into `out` (cleared first), so the writer reuses one buffer.
    pub fn encode_into(create_rev: u64, value: Option<&[u8]>, out: &mut Vec<u8>) {
        out.clear();
        out.reserve(9 + value.map_or(0, <[u8]>::len));
        out.push(if value.is_some() {
            TAG_PUT
        } else {
            TAG_TOMBSTONE
        });
        out.extend_from_slice(&create_rev.to_be_bytes());
        out.extend_from_slice(value.unwrap_or_default());
    }

    /// Decodes a record.
    pub fn decode(raw: &[u8]) -> Result<Self, StorageError> {
        let corrupt = || StorageError::Corrupt {
            key: String::new(),
            message: "malformed history record".into(),
        };
        let (&tag, rest) = raw.split_first().ok_or_else(corrupt)?;
        let (rev, body) = rest.split_at_checked(8).ok_or_else(corrupt)?;
        let create_rev = u64::from_be_bytes(rev.try_into().map_err(|_| corrupt())?);
        let value = match tag {
            TAG_PUT => Some(body.to_vec()),
            TAG_TOMBSTONE => None,
            _ => return Err(corrupt()),
        };
        Ok(Record { create_rev, value })
    }
}

/// Maps any redb error to an internal storage error.
pub fn db_err(e: impl Into<redb::Error>) -> StorageError {
    StorageError::Internal(format!("embedded storage: {}", e.into()))
}

/// The latest version of `key` at or before `rev`: `(mod_rev, record)`.
pub fn version_at<T: ReadableTable<(&'static str, u64), &'static [u8]>>(
    history: &T,
    key: &str,
    rev: u64,
) -> Result<Option<(u64, Record)>, StorageError> {
    let mut range = history.range((key, 0u64)..=(key, rev)).map_err(db_err)?;
    match range.next_back() {
        None => Ok(None),
        Some(entry) => {
            let (k, v) = entry.map_err(db_err)?;
            Ok(Some((k.value().1, Record::decode(v.value())?)))
        }
    }
}

/// The version of `key` just before `rev` (the previous value of the change at `rev`).
pub fn version_before<T: ReadableTable<(&'static str, u64), &'static [u8]>>(
    history: &T,
    key: &str,
    rev: u64,
) -> Result<Option<(u64, Record)>, StorageError> {
    if rev == 0 {
        return Ok(None);
    }
    version_at(history, key, rev - 1)
}

/// The current revision: the newest `by_rev` entry (compaction always keeps it), or the
/// `meta` record written at compaction time, whichever is larger. Deriving it keeps `meta`
/// out of every write transaction (one B-tree fewer to flush per commit).
pub fn current_rev<B: ReadableTable<u64, &'static str>, M: ReadableTable<&'static str, u64>>(
    by_rev: &B,
    meta: &M,
) -> Result<u64, StorageError> {
    let last = by_rev
        .last()
        .map_err(db_err)?
        .map(|(k, _)| k.value())
        .unwrap_or(0);
    // Like etcd, an empty store is at revision 1 (the first write gets 2): revision 0 never
    // names a state, so "0" can keep meaning "any" and a list of an empty store still returns
    // a revision a watch can start after.
    Ok(last.max(meta_get(meta, META_REV)?).max(1))
}

/// Reads a `meta` counter (0 when unset).
pub fn meta_get<T: ReadableTable<&'static str, u64>>(
    meta: &T,
    name: &str,
) -> Result<u64, StorageError> {
    Ok(meta
        .get(name)
        .map_err(db_err)?
        .map(|g| g.value())
        .unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_round_trip() {
        for rec in [
            Record {
                create_rev: 7,
                value: Some(b"{}".to_vec()),
            },
            Record {
                create_rev: 3,
                value: None,
            },
        ] {
            assert_eq!(Record::decode(&rec.encode()).unwrap(), rec);
        }
        assert!(Record::decode(&[9, 0]).is_err());
    }
}
