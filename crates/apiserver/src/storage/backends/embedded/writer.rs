//! The single writer thread of the embedded backend. redb has one writer at a time, which is
//! etcd's one global revision counter; concurrent requests queued while a commit is being
//! fsynced are applied together in the next transaction (group commit), each with its own
//! revision, and all acknowledged after the one durable commit.
//!
//! Durability: a request is answered only after `commit()` of a transaction with
//! [`Durability::Immediate`] returned, i.e. after redb's fsync of that transaction completed.
//! redb's default (one-phase, checksummed) commit needs a single `fdatasync` per commit; the
//! writer keeps that default rather than two-phase commit, which would add a second one.

use std::sync::atomic::Ordering;
use std::sync::{Arc, mpsc as std_mpsc};

use bytes::Bytes;
use redb::{Database, Durability, ReadableTable};
use tokio::sync::oneshot;

use super::Shared;
use super::layout::{
    BY_REV, HISTORY, LATEST, META, META_COMPACT, META_REV, Record, db_err, meta_get,
};
use crate::storage::StorageError;
use crate::storage::watch::RawEvent;

/// Most requests applied in one transaction. Everything queued while the previous commit was
/// being fsynced goes into the next one (one waiting request per concurrent client); the cap only
/// bounds a transaction when clients queue faster than the writer drains.
const MAX_BATCH: usize = 8192;

/// What a write requires of the key's current state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expect {
    /// The key must not exist (`KeyExists` otherwise): create.
    Absent,
    /// The key must not exist (`Conflict` otherwise): guaranteed update of a missing object.
    AbsentOrConflict,
    /// The key's current revision must be this (`Conflict` otherwise).
    Rev(u64),
}

/// A write operation.
#[derive(Debug)]
pub enum Op {
    /// Put a value.
    Put {
        /// Key.
        key: String,
        /// Stored bytes.
        value: Bytes,
        /// The compare.
        expect: Expect,
    },
    /// Delete a key at an expected revision.
    Delete {
        /// Key.
        key: String,
        /// The key's current revision.
        expect_rev: u64,
    },
    /// Compact history before a revision.
    Compact {
        /// The revision.
        rev: u64,
    },
}

/// The result of a write: its revision and the previous value.
#[derive(Debug)]
pub struct Outcome {
    /// The revision of the write (for a compaction: the compacted revision).
    pub rev: u64,
    /// The previous stored value, if any.
    pub prev: Option<Bytes>,
}

/// A queued request.
pub struct Request {
    /// The operation.
    pub op: Op,
    /// Where the result goes.
    pub reply: oneshot::Sender<Result<Outcome, StorageError>>,
}

struct Applied {
    outcome: Outcome,
    event: Option<Arc<RawEvent>>,
}

/// The counters as of the last durable commit; the writer is the only one changing them, so it
/// need not re-read them in every transaction.
#[derive(Clone, Copy)]
struct Counters {
    rev: u64,
    compact: u64,
}

/// Runs the writer loop until every sender is gone.
pub fn run(db: Arc<Database>, shared: Arc<Shared>, rx: std_mpsc::Receiver<Request>) {
    // Read from the database (again) whenever a commit may have failed half-way.
    let mut counters: Option<Counters> = None;
    let mut ops = Vec::new();
    let mut replies = Vec::new();
    while let Ok(first) = rx.recv() {
        ops.push(first.op);
        replies.push(first.reply);
        while ops.len() < MAX_BATCH {
            match rx.try_recv() {
                Ok(r) => {
                    ops.push(r.op);
                    replies.push(r.reply);
                }
                Err(_) => break,
            }
        }
        let is_compact: Vec<bool> = ops
            .iter()
            .map(|op| matches!(op, Op::Compact { .. }))
            .collect();
        match apply_batch(&db, counters, ops.drain(..)) {
            Ok((results, after)) => {
                counters = Some(after);
                // Publish in revision order, then acknowledge.
                {
                    let _publishing = super::lock(&shared.publish_lock);
                    let mut last = None;
                    for r in results.iter().flatten() {
                        if let Some(ev) = &r.event {
                            let _ = shared.bus.send(super::Bus::Event(ev.clone()));
                            last = Some(ev.rev);
                        }
                    }
                    if let Some(rev) = last {
                        shared.current_rev.store(rev, Ordering::SeqCst);
                    }
                }
                for ((reply, res), compact) in replies.drain(..).zip(results).zip(&is_compact) {
                    if let (true, Ok(a)) = (compact, &res) {
                        shared
                            .compact_rev
                            .fetch_max(a.outcome.rev, Ordering::SeqCst);
                    }
                    let _ = reply.send(res.map(|a| a.outcome));
                }
                shared.healthy.store(true, Ordering::SeqCst);
            }
            Err(err) => {
                counters = None;
                shared.healthy.store(false, Ordering::SeqCst);
                *super::lock(&shared.last_error) = Some(err.to_string());
                for reply in replies.drain(..) {
                    let _ = reply.send(Err(err.clone()));
                }
            }
        }
    }
}

type BatchResult = Vec<Result<Applied, StorageError>>;

fn apply_batch(
    db: &Database,
    counters: Option<Counters>,
    batch: impl ExactSizeIterator<Item = Op>,
) -> Result<(BatchResult, Counters), StorageError> {
    let mut txn = db.begin_write().map_err(db_err)?;
    txn.set_durability(Durability::Immediate).map_err(db_err)?;
    let mut results = Vec::with_capacity(batch.len());
    let mut encoded = Vec::new();
    let after;
    {
        let mut history = txn.open_table(HISTORY).map_err(db_err)?;
        let mut latest = txn.open_table(LATEST).map_err(db_err)?;
        let mut by_rev = txn.open_table(BY_REV).map_err(db_err)?;
        let Counters {
            mut rev,
            mut compact,
        } = match counters {
            Some(c) => c,
            None => {
                let meta = txn.open_table(META).map_err(db_err)?;
                Counters {
                    rev: super::layout::current_rev(&by_rev, &meta)?,
                    compact: meta_get(&meta, META_COMPACT)?,
                }
            }
        };
        let compact_before = compact;
        for op in batch {
            let res = match op {
                Op::Put { key, value, expect } => {
                    let current = latest.get(key.as_str()).map_err(db_err)?.map(|g| g.value());
                    match (expect, current) {
                        (Expect::Absent, Some(cur)) => Err(StorageError::KeyExists {
                            key,
                            resource_version: cur,
                        }),
                        (Expect::AbsentOrConflict, Some(_)) => Err(StorageError::Conflict {
                            key,
                            resource_version: 0,
                        }),
                        (Expect::Rev(want), cur) if cur != Some(want) => {
                            Err(StorageError::Conflict {
                                key,
                                resource_version: want,
                            })
                        }
                        (_, cur) => {
                            let prev = match cur {
                                Some(cur_rev) => history
                                    .get((key.as_str(), cur_rev))
                                    .map_err(db_err)?
                                    .map(|g| Record::decode(g.value()))
                                    .transpose()?,
                                None => None,
                            };
                            rev += 1;
                            let create_rev = prev.as_ref().map(|p| p.create_rev).unwrap_or(rev);
                            Record::encode_into(create_rev, Some(&value), &mut encoded);
                            history
                                .insert((key.as_str(), rev), encoded.as_slice())
                                .map_err(db_err)?;
                            latest.insert(key.as_str(), rev).map_err(db_err)?;
                            by_rev.insert(rev, key.as_str()).map_err(db_err)?;
                            let prev = prev.and_then(|p| p.value).map(Bytes::from);
                            Ok(Applied {
                                outcome: Outcome {
                                    rev,
                                    prev: prev.clone(),
                                },
                                event: Some(Arc::new(RawEvent {
                                    key,
                                    rev,
                                    value: Some(value),
                                    prev,
                                })),
                            })
                        }
                    }
                }
                Op::Delete { key, expect_rev } => {
                    let current = latest.get(key.as_str()).map_err(db_err)?.map(|g| g.value());
                    match current {
                        None => Err(StorageError::KeyNotFound {
                            key,
                            resource_version: rev,
                        }),
                        Some(cur) if cur != expect_rev => Err(StorageError::Conflict {
                            key,
                            resource_version: expect_rev,
                        }),
                        Some(cur) => {
                            let prev = history
                                .get((key.as_str(), cur))
                                .map_err(db_err)?
                                .map(|g| Record::decode(g.value()))
                                .transpose()?;
                            rev += 1;
                            let create_rev = prev.as_ref().map(|p| p.create_rev).unwrap_or(0);
                            Record::encode_into(create_rev, None, &mut encoded);
                            history
                                .insert((key.as_str(), rev), encoded.as_slice())
                                .map_err(db_err)?;
                            latest.remove(key.as_str()).map_err(db_err)?;
                            by_rev.insert(rev, key.as_str()).map_err(db_err)?;
                            let prev = prev.and_then(|p| p.value).map(Bytes::from);
                            Ok(Applied {
                                outcome: Outcome {
                                    rev,
                                    prev: prev.clone(),
                                },
                                event: Some(Arc::new(RawEvent {
                                    key,
                                    rev,
                                    value: None,
                                    prev,
                                })),
                            })
                        }
                    }
                }
                Op::Compact { rev: target } => {
                    if target <= compact {
                        Err(StorageError::Expired {
                            requested: target,
                            current: compact,
                            message: format!(
                                "mvcc: required revision has been compacted (compacted at {compact})"
                            ),
                            continue_token: None,
                        })
                    } else if target > rev {
                        Err(StorageError::TooLargeResourceVersion {
                            requested: target,
                            current: rev,
                            retry_after_seconds: 0,
                        })
                    } else {
                        compact_range(&mut history, &mut by_rev, compact, target)?;
                        compact = target;
                        Ok(Applied {
                            outcome: Outcome {
                                rev: target,
                                prev: None,
                            },
                            event: None,
                        })
                    }
                }
            };
            results.push(res);
        }
        if compact != compact_before {
            let mut meta = txn.open_table(META).map_err(db_err)?;
            meta.insert(META_REV, rev).map_err(db_err)?;
            meta.insert(META_COMPACT, compact).map_err(db_err)?;
        }
        after = Counters { rev, compact };
    }
    txn.commit().map_err(db_err)?;
    Ok((results, after))
}

/// Drops history no read or watch at or after `target` can need. For every key changed in
/// `[from, target]`: versions before its last version at or before `target` go; that last
/// version stays (reads at `target` and the previous value of later events need it) unless it is
/// a tombstone older than `target`; when the last version is exactly `target`, the one before it
/// stays too, so a watch from `target - 1` still sees that event with its previous value.
/// `by_rev` entries before `target` go (watches from before `target - 1` are refused).
fn compact_range(
    history: &mut redb::Table<(&str, u64), &[u8]>,
    by_rev: &mut redb::Table<u64, &str>,
    from: u64,
    target: u64,
) -> Result<(), StorageError> {
    let mut keys: Vec<String> = Vec::new();
    let mut revs: Vec<u64> = Vec::new();
    {
        let range = by_rev.range(from..=target).map_err(db_err)?;
        for entry in range {
            let (r, k) = entry.map_err(db_err)?;
            keys.push(k.value().to_string());
            if r.value() < target {
                revs.push(r.value());
            }
        }
    }
    keys.sort();
    keys.dedup();
    for key in &keys {
        let mut versions: Vec<(u64, bool)> = Vec::new();
        {
            let range = history
                .range((key.as_str(), 0u64)..=(key.as_str(), target))
                .map_err(db_err)?;
            for entry in range {
                let (k, v) = entry.map_err(db_err)?;
                let tombstone = Record::decode(v.value())?.value.is_none();
                versions.push((k.value().1, tombstone));
            }
        }
        let Some(&(last_rev, last_tombstone)) = versions.last() else {
            continue;
        };
        let keep_from = if last_rev == target && versions.len() >= 2 {
            versions[versions.len() - 2].0
        } else {
            last_rev
        };
        for (r, _) in &versions {
            let drop_last = last_tombstone && last_rev < target;
            if *r < keep_from || drop_last {
                history.remove((key.as_str(), *r)).map_err(db_err)?;
            }
        }
    }
    for r in revs {
        by_rev.remove(r).map_err(db_err)?;
    }
    Ok(())
}
