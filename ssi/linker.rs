// SPDX-License-Identifier: GPL-2.0

//! Linkers: what a set's objects are tied to, in Kerrighed's terms.
//!
//! An **I/O linker** ([`IoLinker`]) is the set's backing store, called by
//! the containers at fixed points of an object's life:
//!
//! * `first_touch`: the home creates the object (the ION; contents start
//!   zeroed) and fills it from the store;
//! * `insert` / `invalidate`: a copy arrives on this node / leaves it;
//! * `flush`: the object's current contents go back to the store (the
//!   `flush` command, under a read access, so they are one coherent
//!   state);
//! * `export` / `import`: the object leaves this node in a message / comes
//!   in from one (identity for both linkers here; the place for a linker
//!   whose objects have a different form on the wire).
//!
//! Two linkers exist: [`MemoryLinker`] (objects are plain memory, zero at
//! first touch, nothing to write back: what `/dev/ssi` maps) and
//! [`FileLinker`] (object `n` is bytes `n * size ..` of a file on the
//! ION, read at first touch and written back by `flush`).
//!
//! **Interface linkers** expose a container: `/dev/ssi` (`devssi.rs`,
//! objects as shared memory), the sysfs accessors (`add`, `read`), and
//! zoidfs's page coherence ([`ClientLinker`]: a module loaded before ssi
//! attaches to a set, and its callbacks run when this node's copies of
//! the set's objects arrive, leave or are sent).

use kernel::bindings;
use kernel::prelude::*;

use kernel::sync::{new_mutex, new_spinlock, Mutex, SpinLock};

use crate::zoid_kernel::abort::AbortFlag;
use crate::zoid_kernel::coherence::Client;
use crate::zoid_kernel::sysfs::SysfsWriter;
use crate::zoid_kernel::vfs::{CPath, Export, File};
use crate::zoid_proto::ssi::control::LinkerKind;

/// What a set's objects are tied to.  Called with the containers' table
/// locked (all of it, `flush` too: a slow store stalls the node's container
/// traffic meanwhile): a linker must not access containers itself.
pub(crate) trait IoLinker: Send + Sync {
    /// The linker's name (`sets` shows it; `define` takes it).
    fn kind(&self) -> &'static str;

    /// Writes what `sets` shows after the kind (nothing by default).
    fn describe(&self, _w: &mut SysfsWriter<'_>) -> Result {
        Ok(())
    }

    /// The home creates object `object`: fill `contents` (zeroed).
    fn first_touch(&self, object: u64, contents: &mut [u8]) -> Result;

    /// A copy of `object` arrived on this node.
    fn insert(&self, _object: u64) {}

    /// This node's copy of `object` went away.
    fn invalidate(&self, _object: u64) {}

    /// Writes `object`'s contents back to the store.
    fn flush(&self, _object: u64, _contents: &[u8]) -> Result {
        Ok(())
    }

    /// The bytes that carry `object`'s `contents` to another node.
    fn export(&self, _object: u64, contents: &[u8], out: &mut KVec<u8>) -> Result {
        out.extend_from_slice(contents, GFP_KERNEL)?;
        Ok(())
    }

    /// Contents from the bytes another node's `export` made (`EMSGSIZE`
    /// if they do not fit).
    fn import(&self, _object: u64, bytes: &[u8], contents: &mut [u8]) -> Result {
        if bytes.len() != contents.len() {
            return Err(EMSGSIZE);
        }
        contents.copy_from_slice(bytes);
        Ok(())
    }
}

/// Objects are memory: zero at first touch, nothing to write back.
pub(crate) struct MemoryLinker;

impl IoLinker for MemoryLinker {
    fn kind(&self) -> &'static str {
        "memory"
    }

    fn first_touch(&self, _object: u64, _contents: &mut [u8]) -> Result {
        Ok(())
    }
}

/// Object `n` of the set is bytes `n * size .. (n + 1) * size` of a file
/// on the ION (past its end: zeros).  The file is opened (created if
/// needed) when the set is defined and stays open while the set exists.
pub(crate) struct FileLinker {
    path: KVec<u8>,
    file: File,
}

impl FileLinker {
    /// Opens (or creates, mode 0600) the absolute `path`.
    pub(crate) fn open(path: &[u8]) -> Result<Self> {
        let file = Export::open(c"/")?.open_file(
            &CPath::new(path)?,
            bindings::O_RDWR | bindings::O_CREAT,
            0o600,
        )?;
        let mut p = KVec::with_capacity(path.len(), GFP_KERNEL)?;
        p.extend_from_slice(path, GFP_KERNEL)?;
        Ok(Self { path: p, file })
    }

    /// Where object `object` of `len` bytes starts in the file (`EFBIG`
    /// past what a file offset can say).
    fn offset(object: u64, len: usize) -> Result<i64> {
        object
            .checked_mul(len as u64)
            .and_then(|o| i64::try_from(o).ok())
            .ok_or(EFBIG)
    }
}

impl IoLinker for FileLinker {
    fn kind(&self) -> &'static str {
        "file"
    }

    fn describe(&self, w: &mut SysfsWriter<'_>) -> Result {
        w.write_bytes(b" ")?;
        w.write_bytes(&self.path)
    }

    fn first_touch(&self, object: u64, contents: &mut [u8]) -> Result {
        let mut pos = Self::offset(object, contents.len())?;
        let mut done = 0;
        while done < contents.len() {
            let n = self.file.read(&mut contents[done..], Some(&mut pos))?;
            if n == 0 {
                // Past the end of the file: the rest stays zero.
                break;
            }
            done += n;
        }
        Ok(())
    }

    fn flush(&self, object: u64, contents: &[u8]) -> Result {
        let mut pos = Self::offset(object, contents.len())?;
        self.file.write_all(contents, &mut pos)
    }
}

/// The linker of a set defined on the home, as another node knows it:
/// only its kind (objects are created, and written back, on the home).
pub(crate) struct RemoteLinker(pub(crate) LinkerKind);

impl IoLinker for RemoteLinker {
    fn kind(&self) -> &'static str {
        self.0.name()
    }

    fn first_touch(&self, _object: u64, _contents: &mut [u8]) -> Result {
        // Only the home creates objects.
        Err(EINVAL)
    }

    fn flush(&self, _object: u64, _contents: &[u8]) -> Result {
        Err(EINVAL)
    }
}

/// A set another module caches through (zoidfs, `zoid_coherence.h`): the
/// set's own linker does the I/O, the client hears of this node's copies
/// (and writes back or drops what it cached of them).
#[pin_data]
pub(crate) struct ClientLinker {
    /// The set's linker before the client attached (and after).
    pub(crate) inner: kernel::sync::Arc<dyn IoLinker>,
    /// `None` once detached: the callbacks run under this lock, so
    /// detaching waits for the one running.
    #[pin]
    client: Mutex<Option<Client>>,
    /// The client's give-up flag (`umount -f`), `None` once detached (the
    /// flag may go with the client); a spinlock, not the client's mutex,
    /// so that a hold can look at it while a callback runs.
    #[pin]
    abort: SpinLock<Option<AbortFlag>>,
}

impl ClientLinker {
    /// `client` on top of `inner`.
    pub(crate) fn new(
        inner: kernel::sync::Arc<dyn IoLinker>,
        client: Client,
    ) -> Result<kernel::sync::Arc<Self>> {
        let abort = client.abort_flag();
        kernel::sync::Arc::pin_init(
            pin_init!(Self {
                inner,
                client <- new_mutex!(Some(client), "ssi::client"),
                abort <- new_spinlock!(abort, "ssi::client_abort"),
            }),
            GFP_KERNEL,
        )
    }

    /// No callback runs, and the give-up flag is not read, after this
    /// returns.
    pub(crate) fn detach(&self) {
        *self.abort.lock() = None;
        *self.client.lock() = None;
    }

    /// Whether the client gave up (its mount's `umount -f`): its accesses
    /// fail instead of waiting.
    pub(crate) fn aborted(&self) -> bool {
        self.abort.lock().as_ref().is_some_and(AbortFlag::is_set)
    }

    fn with_client(&self, f: impl FnOnce(&Client)) {
        if let Some(c) = self.client.lock().as_ref() {
            f(c);
        }
    }
}

impl IoLinker for ClientLinker {
    fn kind(&self) -> &'static str {
        self.inner.kind()
    }

    fn describe(&self, w: &mut SysfsWriter<'_>) -> Result {
        self.inner.describe(w)?;
        w.write_bytes(b" (cached through)")
    }

    fn first_touch(&self, object: u64, contents: &mut [u8]) -> Result {
        self.inner.first_touch(object, contents)
    }

    fn insert(&self, object: u64) {
        self.inner.insert(object);
        self.with_client(|c| c.insert(object));
    }

    fn invalidate(&self, object: u64) {
        self.with_client(|c| c.invalidate(object));
        self.inner.invalidate(object);
    }

    fn flush(&self, object: u64, contents: &[u8]) -> Result {
        self.inner.flush(object, contents)
    }

    fn export(&self, object: u64, contents: &[u8], out: &mut KVec<u8>) -> Result {
        // What the client cached of the object reaches its store first.
        self.with_client(|c| c.export(object));
        self.inner.export(object, contents, out)
    }

    fn import(&self, object: u64, bytes: &[u8], contents: &mut [u8]) -> Result {
        self.inner.import(object, bytes, contents)
    }
}

/// A set's definition: its name, object size and I/O linker.
pub(crate) struct SetDef {
    pub(crate) name: KVec<u8>,
    pub(crate) size: usize,
    pub(crate) kind: LinkerKind,
    pub(crate) linker: kernel::sync::Arc<dyn IoLinker>,
    /// The module caching through the set, if one attached.
    pub(crate) client: Option<kernel::sync::Arc<ClientLinker>>,
    /// The nodes the set is limited to, besides the home (`None`: every
    /// node; `sets.rs`).
    pub(crate) members: Option<KVec<crate::zoid_proto::ssi::coherence::NodeId>>,
}

/// Whether `size` can be a set's object size: a power of two from 64
/// bytes (room for the counter `add` uses) to a page.
pub(crate) fn valid_object_size(size: u64, page: usize) -> bool {
    size.is_power_of_two() && (64..=page as u64).contains(&size)
}

/// Whether `name` can name a set: 1 to 32 letters, digits, `_`, `-`, `.`.
pub(crate) fn valid_set_name(name: &[u8]) -> bool {
    (1..=32).contains(&name.len())
        && name
            .iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-' | b'.'))
}

#[kunit_tests(ssi_linker)]
mod tests {
    use super::*;

    /// Object sizes are powers of two from 64 bytes to a page.
    #[test]
    fn object_sizes_are_powers_of_two_up_to_a_page() {
        assert!(valid_object_size(64, 4096));
        assert!(valid_object_size(4096, 4096));
        assert!(valid_object_size(512, 4096));
        assert!(!valid_object_size(32, 4096));
        assert!(!valid_object_size(100, 4096));
        assert!(!valid_object_size(8192, 4096));
        assert!(!valid_object_size(0, 4096));
    }

    /// Names are short and plain.
    #[test]
    fn set_names_are_short_and_plain() {
        assert!(valid_set_name(b"counters"));
        assert!(valid_set_name(b"job-42.shm_a"));
        assert!(!valid_set_name(b""));
        assert!(!valid_set_name(b"a b"));
        assert!(!valid_set_name(b"a/b"));
        assert!(!valid_set_name(&[b'x'; 33]));
    }

    /// A file offset that does not fit is refused, not wrapped.
    #[test]
    fn file_offsets_do_not_wrap() {
        assert_eq!(FileLinker::offset(3, 4096), Ok(3 * 4096));
        assert_eq!(FileLinker::offset(u64::MAX / 64, 4096), Err(EFBIG));
        assert_eq!(FileLinker::offset(1 << 53, 4096), Err(EFBIG));
    }

    /// What a fake client heard: the sum of `(event + 1) * object`.
    static HEARD: kernel::sync::atomic::Atomic<u64> = kernel::sync::atomic::Atomic::new(0);

    fn heard() -> u64 {
        HEARD.xchg(0, kernel::sync::atomic::Relaxed)
    }

    extern "C" fn heard_insert(_ctx: *mut kernel::ffi::c_void, object: u64) {
        HEARD.fetch_add(object, kernel::sync::atomic::Relaxed);
    }

    extern "C" fn heard_invalidate(_ctx: *mut kernel::ffi::c_void, object: u64) {
        HEARD.fetch_add(2 * object, kernel::sync::atomic::Relaxed);
    }

    extern "C" fn heard_export(_ctx: *mut kernel::ffi::c_void, object: u64) {
        HEARD.fetch_add(3 * object, kernel::sync::atomic::Relaxed);
    }

    /// A client linker tells its client of arrivals, departures and
    /// sends, leaves the I/O to the set's linker, and is silent once
    /// detached.
    #[test]
    fn client_linker_calls_the_client_until_detached() {
        let _ = heard();
        // SAFETY: the callbacks only count, from any thread.
        let client = unsafe {
            Client::new(
                core::ptr::null_mut(),
                Some(heard_insert),
                Some(heard_invalidate),
                Some(heard_export),
                core::ptr::null(),
            )
        };
        let inner: kernel::sync::Arc<dyn IoLinker> =
            kernel::sync::Arc::new(MemoryLinker, GFP_KERNEL).unwrap();
        let l = ClientLinker::new(inner, client).unwrap();
        assert_eq!(l.kind(), "memory");
        l.insert(5);
        assert_eq!(heard(), 5);
        l.invalidate(5);
        assert_eq!(heard(), 10);
        let mut out = KVec::new();
        l.export(7, &[9, 9], &mut out).unwrap();
        assert_eq!((heard(), &out[..]), (21, &[9u8, 9][..]));
        let mut c = [0u8; 4];
        l.first_touch(1, &mut c).unwrap();
        assert_eq!((heard(), c), (0, [0; 4]));
        l.detach();
        l.insert(5);
        l.invalidate(5);
        l.export(7, &[1], &mut out).unwrap();
        assert_eq!(heard(), 0);
    }

    /// A client's give-up flag (`umount -f`) is read while it is
    /// attached, and no more once it detached.
    #[test]
    fn client_linker_reads_the_give_up_flag_until_detached() {
        let flag = kernel::sync::atomic::Atomic::new(0i32);
        // SAFETY: no callbacks; `flag` outlives the linker's use of it
        // (it is detached below, before `flag` goes).
        let client = unsafe {
            Client::new(
                core::ptr::null_mut(),
                None,
                None,
                None,
                core::ptr::from_ref(&flag).cast(),
            )
        };
        let inner: kernel::sync::Arc<dyn IoLinker> =
            kernel::sync::Arc::new(MemoryLinker, GFP_KERNEL).unwrap();
        let l = ClientLinker::new(inner, client).unwrap();
        assert!(!l.aborted());
        flag.store(1, kernel::sync::atomic::Relaxed);
        assert!(l.aborted());
        l.detach();
        assert!(!l.aborted());
    }

    /// The default export/import move the bytes unchanged, and import
    /// refuses a wrong length.
    #[test]
    fn memory_export_import_is_identity() {
        let l = MemoryLinker;
        let mut out = KVec::new();
        l.export(7, &[1, 2, 3], &mut out).unwrap();
        assert_eq!(&out[..], &[1, 2, 3]);
        let mut c = [0u8; 3];
        l.import(7, &out, &mut c).unwrap();
        assert_eq!(c, [1, 2, 3]);
        let mut short = [0u8; 2];
        assert_eq!(l.import(7, &out, &mut short), Err(EMSGSIZE));
    }
}
