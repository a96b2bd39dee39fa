//! The single writer thread of the embedded backend. redb has one writer at a time, which is
//! etcd's one global revision counter; concurrent requests queued while a commit is being
//! fsynced are applied together in the next transaction (group commit), each with its own
//! revision, and all acknowledged after the one durable commit.
//!
//! Durability: a request is answered only after `commit()` of a transaction with
//! [`Durability::Immediate`] returned, i.e. after redb's fsync of that transaction completed.
//! redb's default (one-phase, checksummed) commit needs a single `fdatasync` per commit; the
//! writer keeps that default rather than two-phase commit, which would add a second one.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, mpsc as std_mpsc};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use redb::{Database, Durability, ReadableDatabase, ReadableTable};
use tokio::sync::oneshot;

use super::Shared;
use super::layout::{
    BY_REV, HISTORY, LATEST, LEASES, META, META_COMPACT, META_REV, Record, db_err, meta_get,
};
use crate::storage::StorageError;
use crate::storage::watch::RawEvent;

/// Most requests applied in one transaction. Everything queued while the previous commit was
/// being fsynced goes into the next one (one waiting request per concurrent client); the cap only
/// bounds a transaction when clients queue faster than the writer drains.
const MAX_BATCH: usize = 8192;
/// How long the writer waits before retrying an expiry whose commit failed.
const EXPIRY_RETRY: Duration = Duration::from_millis(100);

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
        /// A time to live: the key is deleted this long after the write unless written again.
        /// A put without one ends the key's earlier time to live, as an etcd put without a
        /// lease detaches the key from its lease.
        ttl: Option<Duration>,
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
    /// Delete a key whose time to live ran out (queued by the writer itself, never answered):
    /// only if its expiry is still `expiry` (not renewed meanwhile).
    Expire {
        /// Key.
        key: String,
        /// The expiry it was queued for (milliseconds since the Unix epoch).
        expiry: u64,
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

/// The keys with a time to live and their expiry in milliseconds since the Unix epoch, as of
/// the last durable commit (the writer's own copy of the `leases` table).
type Leases = BTreeMap<String, u64>;

/// Milliseconds since the Unix epoch.
fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

/// Reads the `leases` table.
fn load_leases(db: &Database) -> Result<Leases, StorageError> {
    let txn = db.begin_read().map_err(db_err)?;
    let table = match txn.open_table(LEASES) {
        Ok(t) => t,
        Err(redb::TableError::TableDoesNotExist(_)) => return Ok(Leases::new()),
        Err(e) => return Err(db_err(e)),
    };
    let mut leases = Leases::new();
    for entry in table.iter().map_err(db_err)? {
        let (k, v) = entry.map_err(db_err)?;
        leases.insert(k.value().to_string(), v.value());
    }
    Ok(leases)
}

/// The expiries due at `now`, as [`Op::Expire`]s.
fn due(leases: &Leases, now: u64) -> Vec<Op> {
    leases
        .iter()
        .filter(|(_, expiry)| **expiry <= now)
        .map(|(key, expiry)| Op::Expire {
            key: key.clone(),
            expiry: *expiry,
        })
        .collect()
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

/// Runs the writer loop until every sender is gone. Between requests it wakes when the next
/// time to live runs out and deletes the expired keys.
pub fn run(db: Arc<Database>, shared: Arc<Shared>, rx: std_mpsc::Receiver<Request>) {
    // Read from the database (again) whenever a commit may have failed half-way.
    let mut counters: Option<Counters> = None;
    let mut leases = load_leases(&db).unwrap_or_default();
    let mut ops = Vec::new();
    let mut replies = Vec::new();
    loop {
        let next_expiry = leases.values().min().copied();
        let first = match next_expiry {
            None => match rx.recv() {
                Ok(r) => Some(r),
                Err(_) => break,
            },
            Some(expiry) => {
                let wait = Duration::from_millis(expiry.saturating_sub(now_ms()));
                match rx.recv_timeout(wait) {
                    Ok(r) => Some(r),
                    Err(std_mpsc::RecvTimeoutError::Timeout) => None,
                    Err(std_mpsc::RecvTimeoutError::Disconnected) => break,
                }
            }
        };
        if let Some(first) = first {
            ops.push(first.op);
            replies.push(Some(first.reply));
        }
        while ops.len() < MAX_BATCH {
            match rx.try_recv() {
                Ok(r) => {
                    ops.push(r.op);
                    replies.push(Some(r.reply));
                }
                Err(_) => break,
            }
        }
        for op in due(&leases, now_ms()) {
            ops.push(op);
            replies.push(None);
        }
        if ops.is_empty() {
            continue;
        }
        let is_compact: Vec<bool> = ops
            .iter()
            .map(|op| matches!(op, Op::Compact { .. }))
            .collect();
        let only_expiries = replies.iter().all(Option::is_none);
        match apply_batch(&db, counters, &leases, ops.drain(..)) {
            Ok((results, after, after_leases)) => {
                counters = Some(after);
                if let Some(changed) = after_leases {
                    leases = changed;
                }
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
                    if let Some(reply) = reply {
                        let _ = reply.send(res.map(|a| a.outcome));
                    }
                }
                shared.healthy.store(true, Ordering::SeqCst);
            }
            Err(err) => {
                counters = None;
                if let Ok(reloaded) = load_leases(&db) {
                    leases = reloaded;
                }
                shared.healthy.store(false, Ordering::SeqCst);
                *super::lock(&shared.last_error) = Some(err.to_string());
                for reply in replies.drain(..).flatten() {
                    let _ = reply.send(Err(err.clone()));
                }
                if only_expiries {
                    // Nobody waits on it: retry the expiry after a pause instead of spinning.
                    std::thread::sleep(EXPIRY_RETRY);
                }
            }
        }
    }
}

type BatchResult = Vec<Result<Applied, StorageError>>;

/// The tables a batch writes.
struct Tables<'t> {
    history: redb::Table<'t, (&'static str, u64), &'static [u8]>,
    latest: redb::Table<'t, &'static str, u64>,
    by_rev: redb::Table<'t, u64, &'static str>,
}

impl Tables<'_> {
    /// Deletes `key`, whose current version is `cur`, at revision `rev`.
    fn delete(
        &mut self,
        key: String,
        cur: u64,
        rev: u64,
        encoded: &mut Vec<u8>,
    ) -> Result<Applied, StorageError> {
        let prev = self
            .history
            .get((key.as_str(), cur))
            .map_err(db_err)?
            .map(|g| Record::decode(g.value()))
            .transpose()?;
        let create_rev = prev.as_ref().map(|p| p.create_rev).unwrap_or(0);
        Record::encode_into(create_rev, None, encoded);
        self.history
            .insert((key.as_str(), rev), encoded.as_slice())
            .map_err(db_err)?;
        self.latest.remove(key.as_str()).map_err(db_err)?;
        self.by_rev.insert(rev, key.as_str()).map_err(db_err)?;
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

/// The writer's view of the `leases` table within a batch: the table is opened only when a
/// batch touches a key with a time to live (most batches never do).
struct LeaseChanges<'t, 'l> {
    txn: &'t redb::WriteTransaction,
    table: Option<redb::Table<'t, &'static str, u64>>,
    leases: std::borrow::Cow<'l, Leases>,
}

impl<'t> LeaseChanges<'t, '_> {
    fn table(&mut self) -> Result<&mut redb::Table<'t, &'static str, u64>, StorageError> {
        if self.table.is_none() {
            self.table = Some(self.txn.open_table(LEASES).map_err(db_err)?);
        }
        self.table
            .as_mut()
            .ok_or_else(|| StorageError::Internal("embedded storage: leases table".into()))
    }

    /// Records that `key` expires at `expiry`, or (`None`) no longer expires.
    fn set(&mut self, key: &str, expiry: Option<u64>) -> Result<(), StorageError> {
        match expiry {
            Some(at) => {
                self.table()?.insert(key, at).map_err(db_err)?;
                self.leases.to_mut().insert(key.to_string(), at);
            }
            None if self.leases.contains_key(key) => {
                self.table()?.remove(key).map_err(db_err)?;
                self.leases.to_mut().remove(key);
            }
            None => {}
        }
        Ok(())
    }
}

fn apply_batch(
    db: &Database,
    counters: Option<Counters>,
    leases: &Leases,
    batch: impl ExactSizeIterator<Item = Op>,
) -> Result<(BatchResult, Counters, Option<Leases>), StorageError> {
    let mut txn = db.begin_write().map_err(db_err)?;
    txn.set_durability(Durability::Immediate).map_err(db_err)?;
    let mut results = Vec::with_capacity(batch.len());
    let mut encoded = Vec::new();
    let after;
    let after_leases;
    {
        let mut tables = Tables {
            history: txn.open_table(HISTORY).map_err(db_err)?,
            latest: txn.open_table(LATEST).map_err(db_err)?,
            by_rev: txn.open_table(BY_REV).map_err(db_err)?,
        };
        let mut lease_changes = LeaseChanges {
            txn: &txn,
            table: None,
            leases: std::borrow::Cow::Borrowed(leases),
        };
        let Counters {
            mut rev,
            mut compact,
        } = match counters {
            Some(c) => c,
            None => {
                let meta = txn.open_table(META).map_err(db_err)?;
                Counters {
                    rev: super::layout::current_rev(&tables.by_rev, &meta)?,
                    compact: meta_get(&meta, META_COMPACT)?,
                }
            }
        };
        let compact_before = compact;
        for op in batch {
            let res = match op {
                Op::Put {
                    key,
                    value,
                    expect,
                    ttl,
                } => {
                    let current = tables
                        .latest
                        .get(key.as_str())
                        .map_err(db_err)?
                        .map(|g| g.value());
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
                                Some(cur_rev) => tables
                                    .history
                                    .get((key.as_str(), cur_rev))
                                    .map_err(db_err)?
                                    .map(|g| Record::decode(g.value()))
                                    .transpose()?,
                                None => None,
                            };
                            rev += 1;
                            let create_rev = prev.as_ref().map(|p| p.create_rev).unwrap_or(rev);
                            Record::encode_into(create_rev, Some(&value), &mut encoded);
                            tables
                                .history
                                .insert((key.as_str(), rev), encoded.as_slice())
                                .map_err(db_err)?;
                            tables.latest.insert(key.as_str(), rev).map_err(db_err)?;
                            tables.by_rev.insert(rev, key.as_str()).map_err(db_err)?;
                            let expiry = ttl.map(|ttl| {
                                now_ms().saturating_add(
                                    u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX),
                                )
                            });
                            lease_changes.set(&key, expiry)?;
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
                    let current = tables
                        .latest
                        .get(key.as_str())
                        .map_err(db_err)?
                        .map(|g| g.value());
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
                            rev += 1;
                            lease_changes.set(&key, None)?;
                            tables.delete(key, cur, rev, &mut encoded)
                        }
                    }
                }
                Op::Expire { key, expiry } => {
                    let current = tables
                        .latest
                        .get(key.as_str())
                        .map_err(db_err)?
                        .map(|g| g.value());
                    if lease_changes.leases.get(&key) != Some(&expiry) {
                        // Renewed or deleted since it was queued.
                        Ok(Applied {
                            outcome: Outcome { rev, prev: None },
                            event: None,
                        })
                    } else {
                        lease_changes.set(&key, None)?;
                        match current {
                            Some(cur) => {
                                rev += 1;
                                tables.delete(key, cur, rev, &mut encoded)
                            }
                            None => Ok(Applied {
                                outcome: Outcome { rev, prev: None },
                                event: None,
                            }),
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
                        compact_range(&mut tables.history, &mut tables.by_rev, compact, target)?;
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
        // A new map only when the batch changed a time to live.
        after_leases = match lease_changes.leases {
            std::borrow::Cow::Owned(changed) => Some(changed),
            std::borrow::Cow::Borrowed(_) => None,
        };
    }
    txn.commit().map_err(db_err)?;
    Ok((results, after, after_leases))
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
