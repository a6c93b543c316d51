// SPDX-License-Identifier: GPL-2.0

//! uid/gid mapping between CNs and their ION: what the `unix` plug-in runs
//! a call as (`/sys/kernel/zoid/idmap`).
//!
//! A table of ranges per kind, like `/proc/<pid>/uid_map`: `uid CN ION
//! [COUNT]` maps CN ids `CN..CN+COUNT` to ION ids `ION..ION+COUNT`.  An id
//! no range covers passes through unchanged, or becomes the anonymous id
//! with `unmapped squash`.  Root squash (a separate knob) applies to CN id
//! 0 only when no range covers it: an explicit `uid 0 ...` entry is the
//! administrator's choice and wins.
//!
//! Commands (one per line; a write applies all its lines or none):
//!
//! ```text
//! uid CN ION [COUNT]      add a range (COUNT defaults to 1)
//! gid CN ION [COUNT]
//! -uid CN | -gid CN       remove the range that starts at CN
//! unmapped pass|squash    what happens to ids no range covers
//! clear                   no ranges, unmapped pass
//! ```
//!
//! Ranges of one kind may not overlap on either side (a CN id maps to one
//! ION id and back); id `4294967295` (the invalid id) is never mapped.

/// Ranges one kind holds at most.
pub const MAX_RANGES: usize = 32;

/// The uid (or gid) of the squashed identity: nobody / nogroup.
pub const ANON_ID: u32 = 65534;

/// Which ids a range maps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IdKind {
    /// User ids.
    Uid,
    /// Group ids.
    Gid,
}

/// CN ids `cn..cn+count` are ION ids `ion..ion+count`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IdRange {
    /// First CN id.
    pub cn: u32,
    /// First ION id.
    pub ion: u32,
    /// Ids in the range (at least 1).
    pub count: u32,
}

impl IdRange {
    fn end(first: u32, count: u32) -> u64 {
        u64::from(first) + u64::from(count)
    }

    fn overlaps(&self, other: &IdRange) -> bool {
        let meet = |a: u32, b: u32| {
            u64::from(a) < Self::end(b, other.count) && u64::from(b) < Self::end(a, self.count)
        };
        meet(self.cn, other.cn) || meet(self.ion, other.ion)
    }

    fn lookup(&self, id: u32) -> Option<u32> {
        let off = id.checked_sub(self.cn)?;
        (off < self.count).then(|| self.ion + off)
    }
}

/// Why a command was refused (each maps to an errno for sysfs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IdMapError {
    /// Not a command, a bad number, a zero count, a range reaching the
    /// invalid id (`EINVAL`).
    Invalid,
    /// The range overlaps one already there (`EEXIST`).
    Overlap,
    /// No room for another range (`ENOSPC`).
    Full,
    /// `-uid` / `-gid` of a range that is not there (`ENOENT`).
    NotFound,
}

/// One kind's ranges.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Table {
    ranges: [IdRange; MAX_RANGES],
    len: usize,
}

impl Table {
    const EMPTY: Self = Self {
        ranges: [IdRange {
            cn: 0,
            ion: 0,
            count: 0,
        }; MAX_RANGES],
        len: 0,
    };

    fn ranges(&self) -> &[IdRange] {
        &self.ranges[..self.len]
    }

    fn add(&mut self, r: IdRange) -> Result<(), IdMapError> {
        if r.count == 0
            || IdRange::end(r.cn, r.count) > u64::from(u32::MAX)
            || IdRange::end(r.ion, r.count) > u64::from(u32::MAX)
        {
            return Err(IdMapError::Invalid);
        }
        if self.ranges().iter().any(|o| o.overlaps(&r)) {
            return Err(IdMapError::Overlap);
        }
        let slot = self.ranges.get_mut(self.len).ok_or(IdMapError::Full)?;
        *slot = r;
        self.len += 1;
        Ok(())
    }

    fn remove(&mut self, cn: u32) -> Result<(), IdMapError> {
        let i = self
            .ranges()
            .iter()
            .position(|r| r.cn == cn)
            .ok_or(IdMapError::NotFound)?;
        self.ranges.copy_within(i + 1..self.len, i);
        self.len -= 1;
        Ok(())
    }

    fn lookup(&self, id: u32) -> Option<u32> {
        self.ranges().iter().find_map(|r| r.lookup(id))
    }
}

/// The uid and gid tables and the policy for unmapped ids.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IdMap {
    uids: Table,
    gids: Table,
    squash_unmapped: bool,
}

impl Default for IdMap {
    fn default() -> Self {
        Self::new()
    }
}

impl IdMap {
    /// No ranges; unmapped ids pass through.
    pub const fn new() -> Self {
        Self {
            uids: Table::EMPTY,
            gids: Table::EMPTY,
            squash_unmapped: false,
        }
    }

    fn table(&self, kind: IdKind) -> &Table {
        match kind {
            IdKind::Uid => &self.uids,
            IdKind::Gid => &self.gids,
        }
    }

    fn table_mut(&mut self, kind: IdKind) -> &mut Table {
        match kind {
            IdKind::Uid => &mut self.uids,
            IdKind::Gid => &mut self.gids,
        }
    }

    /// The ranges of `kind`, in the order they were added.
    pub fn ranges(&self, kind: IdKind) -> &[IdRange] {
        self.table(kind).ranges()
    }

    /// Whether ids no range covers become [`ANON_ID`].
    pub fn squash_unmapped(&self) -> bool {
        self.squash_unmapped
    }

    /// The ION id a call from CN id `id` runs as; `root_squash` makes an
    /// unmapped 0 [`ANON_ID`].
    pub fn map(&self, kind: IdKind, id: u32, root_squash: bool) -> u32 {
        match self.table(kind).lookup(id) {
            Some(mapped) => mapped,
            None if id == 0 && root_squash => ANON_ID,
            None if self.squash_unmapped => ANON_ID,
            None => id,
        }
    }

    /// Applies every command line of `input` (empty lines skipped), all or
    /// none: on an error the map is unchanged.
    pub fn apply(&mut self, input: &[u8]) -> Result<(), IdMapError> {
        let mut next = *self;
        for line in input.split(|&c| c == b'\n') {
            next.command(line)?;
        }
        *self = next;
        Ok(())
    }

    fn command(&mut self, line: &[u8]) -> Result<(), IdMapError> {
        let mut words = line
            .split(|c| c.is_ascii_whitespace())
            .filter(|w| !w.is_empty());
        let Some(verb) = words.next() else {
            return Ok(());
        };
        let kind = |w: &[u8]| match w {
            b"uid" => Some(IdKind::Uid),
            b"gid" => Some(IdKind::Gid),
            _ => None,
        };
        let r = match verb {
            b"clear" => {
                *self = Self::new();
                Ok(())
            }
            b"unmapped" => match words.next() {
                Some(b"pass") => {
                    self.squash_unmapped = false;
                    Ok(())
                }
                Some(b"squash") => {
                    self.squash_unmapped = true;
                    Ok(())
                }
                _ => Err(IdMapError::Invalid),
            },
            [b'-', rest @ ..] => {
                let k = kind(rest).ok_or(IdMapError::Invalid)?;
                let cn = number(words.next())?;
                self.table_mut(k).remove(cn)
            }
            w => {
                let k = kind(w).ok_or(IdMapError::Invalid)?;
                let cn = number(words.next())?;
                let ion = number(words.next())?;
                let count = match words.next() {
                    Some(w) => number(Some(w))?,
                    None => 1,
                };
                self.table_mut(k).add(IdRange { cn, ion, count })
            }
        };
        match words.next() {
            Some(_) => Err(IdMapError::Invalid),
            None => r,
        }
    }
}

/// A decimal `u32`.
fn number(word: Option<&[u8]>) -> Result<u32, IdMapError> {
    let w = word.ok_or(IdMapError::Invalid)?;
    if w.is_empty() || w.len() > 10 {
        return Err(IdMapError::Invalid);
    }
    let mut v: u64 = 0;
    for &c in w {
        if !c.is_ascii_digit() {
            return Err(IdMapError::Invalid);
        }
        v = v * 10 + u64::from(c - b'0');
    }
    u32::try_from(v).map_err(|_| IdMapError::Invalid)
}
