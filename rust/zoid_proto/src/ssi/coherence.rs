// SPDX-License-Identifier: GPL-2.0

//! Write-invalidate coherence of one container object, in Kerrighed's
//! terms, as a sans-IO state machine.
//!
//! Every node that knows an object keeps one [`Object`]: its state
//! ([`State`], Kerrighed's `INV_COPY` ... `WRITE_OWNER` plus the waits), a
//! *probable owner* and, on the owner, the copyset.  Exactly one node owns
//! the object; readers hold copies that the owner tracks; a write first
//! invalidates every copy and waits for every acknowledgement.
//!
//! * Local accesses: [`Object::acquire`] (read or write) and
//!   [`Object::release`], in the spirit of KDDM's grab/put: while an access
//!   is held the object stays put, and requests from other nodes wait.
//! * Messages from other nodes: [`Object::on_message`].
//! * Both report what to do as [`Action`]s (send a message, install or
//!   drop the contents, create them, grant the access) through a callback;
//!   the caller moves the bytes.
//!
//! Requests find the owner by following probable owners, and a write
//! request re-points every node it passes to the requester, as in the
//! Naimi–Trehel and Li–Hudak algorithms: the probable owners always form
//! chains that end at the owner or at the last node that asked to write,
//! which queues what arrives until it has had its turn.  So no request is
//! lost or bounced around, and writers are served in the order they asked.
//!
//! The transport may reorder messages between different pairs of nodes; a
//! read copy that crosses the invalidation of its own version is
//! recognised as stale (its sender invalidated the waiting node already)
//! and asked for again.
//!
//! Messages are checked against what this node knows, so that a peer that
//! forges them cannot make a write proceed past a valid copy, drop a copy
//! nobody invalidated or hand a node contents it did not ask for
//! ([`Object::on_message`]): an `InvAck` counts only from a node the owner
//! invalidated and has not heard from, an `Invalidate` only from the owner
//! that holds this node in its copyset (the node its copy came from), and
//! a `Copy` or an `Ownership` only while this node waits for it and only
//! with the token of its request.  Who serves a request is not known to
//! the requester (requests are forwarded along probable owners), so every
//! request carries a token, 64 random bits the caller draws for each
//! access ([`Object::acquire`]); the request keeps it as it is forwarded,
//! the owner that serves it sends it back in its `Copy` or `Ownership`,
//! and the requester takes no other ([`Error::BadToken`]).  The nodes the
//! request passes see the token, so one of them can still answer in the
//! owner's place; a node off that path cannot.  Limiting a set to its
//! members ([`super::members`]) keeps other nodes out altogether.
//!
//! A node may refuse a request instead of serving or forwarding it: the
//! node that would have to create the object for it (one it does not
//! know yet, which among honest nodes is always the home) when the
//! neighbour that sent it the request is past its budget of objects
//! ([`super::budget`]).  It creates nothing and answers the requester
//! with a `Refused` that names itself and carries the request's token.
//! The requester takes it only while it waits, only with that token
//! ([`Error::BadToken`] otherwise) and only naming another node (the
//! kernel checks that it names its sender): it leaves its wait state
//! with nothing held or asked for, and the local access fails
//! ([`Action::Refused`]).  A write request re-pointed the nodes it passed
//! to the requester, so the requester then points to the refusing node
//! (which knows nothing of the object: its chain ends at the home) and
//! passes on what queued behind its request, as a node that hands
//! ownership over does.  What is left: a node the request passed knows
//! its token and can refuse it in the owner's place, making the access
//! fail (as it can answer it, or keep it waiting by dropping it), and the
//! requester then points to it.
//!
//! Storage that grows with the number of nodes (the copyset, the nodes
//! that invalidated a wait for a copy, and the queue of waiting requests)
//! is the caller's, through [`NodeSet`] and [`RequestQueue`]; when it
//! cannot grow, the event is refused with [`Error::NoMemory`] before
//! anything changes, and can be given again.
//!
//! `tests/ssi_coherence.rs` checks the invariants (one writer, no stale
//! read, no lost request or ownership, acyclic probable-owner chains) over
//! every interleaving of small scenarios and random larger ones.

/// A node of the cluster (treenet's node ids fit; 32 bits leave room).
pub type NodeId = u32;

/// What a local access needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Access {
    /// A valid copy, shared with other readers.
    Read,
    /// The only copy, writable (ownership).
    Write,
}

/// The state of an object on one node.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum State {
    /// No copy; requests go to the probable owner.
    InvCopy,
    /// A read-only copy, in the owner's copyset.
    ReadCopy,
    /// Owner of an object whose contents do not exist yet: the first access
    /// creates them ([`Action::FirstTouch`]).
    InvOwner,
    /// Owner with a valid copy; other nodes may hold read copies.
    ReadOwner,
    /// Owner with the only copy: writable.
    WriteOwner,
    /// Asked for a read copy.
    WaitRead,
    /// Asked for ownership, to write.
    WaitWrite,
    /// Owner waiting for the acknowledgements of its invalidations, before
    /// writing itself or handing ownership over.
    WaitAcks,
}

impl State {
    /// Kerrighed's name of the state, for sysfs and traces.
    pub fn kerrighed_name(self) -> &'static str {
        match self {
            State::InvCopy => "INV_COPY",
            State::ReadCopy => "READ_COPY",
            State::InvOwner => "INV_OWNER",
            State::ReadOwner => "READ_OWNER",
            State::WriteOwner => "WRITE_OWNER",
            State::WaitRead => "WAIT_OBJ_READ",
            State::WaitWrite => "WAIT_OBJ_WRITE",
            State::WaitAcks => "WAIT_ACK_WRITE",
        }
    }

    /// Whether the node owns the object in this state (`WaitAcks` too: the
    /// ownership has not left yet).
    pub fn is_owner(self) -> bool {
        matches!(
            self,
            State::InvOwner | State::ReadOwner | State::WriteOwner | State::WaitAcks
        )
    }

    /// Whether the node has valid contents in this state.
    pub fn has_copy(self) -> bool {
        matches!(self, State::ReadCopy | State::ReadOwner | State::WriteOwner)
    }
}

/// The kinds of coherence messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum MsgKind {
    /// `node` wants a read copy.
    ReadReq = 1,
    /// `node` wants ownership.
    WriteReq = 2,
    /// A read copy of version `version` (carries the contents).
    Copy = 3,
    /// Ownership of the object at version `version` (carries the contents).
    Ownership = 4,
    /// Drop your copy: version `version` is being written.
    Invalidate = 5,
    /// The copy is dropped.
    InvAck = 6,
    /// The request with token `token` is refused: the node that would
    /// have had to create the object for it is past its budget of objects
    /// for the neighbour that sent it the request.
    Refused = 7,
}

impl MsgKind {
    /// The kind with wire code `code`.
    pub fn from_u8(code: u8) -> Option<Self> {
        Some(match code {
            1 => MsgKind::ReadReq,
            2 => MsgKind::WriteReq,
            3 => MsgKind::Copy,
            4 => MsgKind::Ownership,
            5 => MsgKind::Invalidate,
            6 => MsgKind::InvAck,
            7 => MsgKind::Refused,
            _ => return None,
        })
    }

    /// Whether the message carries the object's contents.
    pub fn carries_contents(self) -> bool {
        matches!(self, MsgKind::Copy | MsgKind::Ownership)
    }

    /// Whether the message asks for the object (`ReadReq`, `WriteReq`):
    /// the only kinds a node handles about an object it does not know yet
    /// (a new object waits for nothing, so any other kind is unexpected
    /// there, and needs no entry).
    pub fn is_request(self) -> bool {
        matches!(self, MsgKind::ReadReq | MsgKind::WriteReq)
    }

    /// Whether the message answers a request with its token (`Copy`,
    /// `Ownership`, `Refused`).
    pub fn answers_request(self) -> bool {
        matches!(self, MsgKind::Copy | MsgKind::Ownership | MsgKind::Refused)
    }
}

/// A coherence message about one object.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Msg {
    /// What it is.
    pub kind: MsgKind,
    /// Requests: the node that wants the object (kept when forwarded).
    /// Other kinds: the sender.
    pub node: NodeId,
    /// `Copy`, `Ownership`: version of the contents carried.
    /// `Invalidate`: the version about to be written.  Otherwise 0.
    pub version: u64,
    /// Requests: the requester's token for this request (kept when
    /// forwarded).  `Copy`, `Ownership`: the token of the request served;
    /// `Refused`: of the request refused.  Otherwise 0.
    pub token: u64,
}

impl Msg {
    /// Whether this message, received from node `src`, may name the node
    /// it names.  Requests travel along probable owners, so a request may
    /// name any node (the one that asked); every other kind names its
    /// sender, and one that names another node is forged (a node acting
    /// in another's name: handing it copies, acking in its place).
    pub fn names_sender_ok(&self, src: NodeId) -> bool {
        self.kind.is_request() || self.node == src
    }
}

/// A request waiting at the node that will serve it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Request {
    /// What is asked for.
    pub access: Access,
    /// Who asks.
    pub node: NodeId,
    /// The requester's token, sent back with the `Copy` or `Ownership`.
    pub token: u64,
}

/// What the caller does on behalf of the state machine, in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Send `msg` to `to`.  For `Copy` and `Ownership`, attach the local
    /// contents (as they are now: a later action may drop them).
    Send {
        /// Destination node.
        to: NodeId,
        /// The message.
        msg: Msg,
    },
    /// Keep the contents carried by the message being handled.
    Install,
    /// The local contents are no longer valid: free them.
    DropContents,
    /// Create the object's initial contents (the I/O linker's first touch).
    FirstTouch,
    /// The local access asked for with [`Object::acquire`] is granted.
    Granted(Access),
    /// The local access asked for with [`Object::acquire`] is refused by
    /// the node its request reached (`Refused`): nothing is held or asked
    /// for any more, and the access fails (`EAGAIN` in ssi.ko).
    Refused(Access),
}

/// Why an event was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Error {
    /// A local access is already asked for or held on this node.
    Busy,
    /// [`Object::release`] without a held access.
    NotHeld,
    /// The copyset or the request queue could not grow: nothing changed,
    /// give the event again later.
    NoMemory,
    /// A message the protocol never sends to a node in this state, or
    /// never from that sender (a corrupt, foreign or forging peer):
    /// ignored, nothing changed.
    Unexpected,
    /// A `Copy`, an `Ownership` or a `Refused` while this node waits for
    /// an answer, without the token of its request: not the answer to it
    /// (forged by a node that did not see the request): ignored, nothing
    /// changed.
    BadToken,
}

/// A set of nodes: the copyset (kept by the owner), and the nodes that
/// invalidated a wait for a read copy.
pub trait NodeSet {
    /// Adds `node`; `Err(NoMemory)` if the set cannot grow.
    fn insert(&mut self, node: NodeId) -> Result<(), Error>;
    /// Removes `node` if present.
    fn remove(&mut self, node: NodeId);
    /// Whether `node` is in the set.
    fn contains(&self, node: NodeId) -> bool;
    /// Whether the set is empty.
    fn is_empty(&self) -> bool;
    /// Calls `f` for each node.
    fn for_each(&self, f: &mut dyn FnMut(NodeId));
    /// Calls `f` for each node and empties the set.
    fn drain_each(&mut self, f: &mut dyn FnMut(NodeId));
}

/// FIFO of requests waiting for this node's turn as owner.
pub trait RequestQueue {
    /// Appends `r`; `Err(NoMemory)` if the queue cannot grow.
    fn push_back(&mut self, r: Request) -> Result<(), Error>;
    /// The oldest request.
    fn front(&self) -> Option<Request>;
    /// Removes the oldest request.
    fn pop_front(&mut self) -> Option<Request>;
}

/// One object's coherence state on one node.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Object<Q, C> {
    me: NodeId,
    state: State,
    /// Probable owner; `me` while owning or waiting to own (with nothing
    /// queued for another writer).
    hint: NodeId,
    /// Version of the local contents (owner and copies); grows at every
    /// write access.
    version: u64,
    /// The owner that holds this node in its copyset: where its read copy
    /// came from, the only node that may invalidate it (kept while the
    /// node waits for ownership after dropping that copy, and after that
    /// request is refused, until the owner invalidates it or hands
    /// ownership over).
    copy_from: Option<NodeId>,
    /// In `WaitAcks`: hand ownership to this node, with the token of its
    /// request, once acknowledged (`None`: the acknowledgements are for a
    /// local write).
    transfer_to: Option<(NodeId, u64)>,
    held: Option<Access>,
    wanted: Option<Access>,
    /// The token of the access last asked for ([`Object::acquire`]): sent
    /// with this node's request for it, and the only one a `Copy`, an
    /// `Ownership` or a `Refused` answering it may carry.
    token: u64,
    /// An invalidation that waits for the local read to end: its sender.
    deferred_ack: Option<NodeId>,
    /// On the owner, the nodes holding read copies; in `WaitAcks`, those
    /// whose invalidation is not acknowledged yet (an acknowledgement
    /// counts once, and only from them).
    copyset: C,
    /// In `WaitRead`: the nodes that invalidated this node since it asked
    /// (only the owner that serves the request does, when its write
    /// crosses the copy it sent): a copy from one of them is stale.
    invalidators: C,
    queue: Q,
}

impl<Q: RequestQueue, C: NodeSet> Object<Q, C> {
    /// The object as node `me` first knows it: `home` owns it, without
    /// contents until first touched; everybody else has no copy and asks
    /// `home`.  `copyset` and `invalidators` are empty sets.
    pub fn new(me: NodeId, home: NodeId, copyset: C, invalidators: C, queue: Q) -> Self {
        Self {
            me,
            state: if me == home {
                State::InvOwner
            } else {
                State::InvCopy
            },
            hint: home,
            version: 0,
            copy_from: None,
            transfer_to: None,
            held: None,
            wanted: None,
            token: 0,
            deferred_ack: None,
            copyset,
            invalidators,
            queue,
        }
    }

    /// The current state.
    pub fn state(&self) -> State {
        self.state
    }

    /// The probable owner.
    pub fn probable_owner(&self) -> NodeId {
        self.hint
    }

    /// Version of the local contents (meaningful with a copy).
    pub fn version(&self) -> u64 {
        self.version
    }

    /// The held local access.
    pub fn held(&self) -> Option<Access> {
        self.held
    }

    /// The local access asked for and not yet granted.
    pub fn wanted(&self) -> Option<Access> {
        self.wanted
    }

    /// This node.
    pub fn me(&self) -> NodeId {
        self.me
    }

    /// While waiting for a read copy: whether a copy from `node` is stale
    /// (`node` invalidated this node since it asked).
    pub fn copy_is_stale(&self, node: NodeId) -> bool {
        self.state == State::WaitRead && self.invalidators.contains(node)
    }

    /// Whether `msg` answers this node's request, as
    /// [`Object::on_message`] would take it: the `Copy` it waits for, or
    /// the `Ownership`, or a `Refused` of it, carrying the request's token
    /// (a copy may still be stale: [`Object::copy_is_stale`]).
    pub fn is_answer(&self, msg: &Msg) -> bool {
        let kind = match self.state {
            State::WaitRead => MsgKind::Copy,
            State::WaitWrite => MsgKind::Ownership,
            _ => return false,
        };
        (msg.kind == kind || msg.kind == MsgKind::Refused)
            && msg.token == self.token
            && msg.version != u64::MAX
            && msg.node != self.me
    }

    /// The node this node's read copy came from, while it may still
    /// invalidate it.
    pub fn copy_from(&self) -> Option<NodeId> {
        self.copy_from
    }

    /// Starts over in `state` at `version`, pointing to `hint`: nothing
    /// asked for, queued, copied or acknowledged any more (a rebuild,
    /// [`super::rebuild`]).
    pub(crate) fn restart(&mut self, state: State, hint: NodeId, version: u64) {
        self.state = state;
        self.hint = hint;
        self.version = version;
        self.copy_from = None;
        self.transfer_to = None;
        self.held = None;
        self.wanted = None;
        self.deferred_ack = None;
        self.copyset.drain_each(&mut |_| {});
        self.invalidators.drain_each(&mut |_| {});
        while self.queue.pop_front().is_some() {}
    }

    /// Whether requests wait here (for this node's turn, or after an
    /// earlier `NoMemory`: see [`Object::poll`]).
    pub fn has_waiting(&self) -> bool {
        self.queue.front().is_some()
    }

    /// Sends a `kind` message naming `node`, with version `version` and
    /// token `token`, to `to`.
    fn send(
        out: &mut dyn FnMut(Action),
        to: NodeId,
        kind: MsgKind,
        node: NodeId,
        version: u64,
        token: u64,
    ) {
        out(Action::Send {
            to,
            msg: Msg {
                kind,
                node,
                version,
                token,
            },
        });
    }

    fn grant(&mut self, access: Access, out: &mut dyn FnMut(Action)) {
        if access == Access::Write {
            self.version = self.version.saturating_add(1);
        }
        self.held = Some(access);
        self.wanted = None;
        out(Action::Granted(access));
    }

    /// Asks for `access` locally.  [`Action::Granted`] comes now, or later
    /// from [`Object::on_message`]; until [`Object::release`], one access
    /// at a time (`Busy`).
    ///
    /// `token` goes with the request this access sends, if it must ask
    /// another node, and only a `Copy` or an `Ownership` that carries it
    /// back is taken: give a new unguessable value (64 random bits) for
    /// every access.
    pub fn acquire(
        &mut self,
        access: Access,
        token: u64,
        out: &mut dyn FnMut(Action),
    ) -> Result<(), Error> {
        if self.held.is_some() || self.wanted.is_some() {
            return Err(Error::Busy);
        }
        self.token = token;
        match (self.state, access) {
            (State::InvOwner, _) => {
                out(Action::FirstTouch);
                self.state = State::WriteOwner;
                self.grant(access, out);
            }
            (State::ReadCopy | State::ReadOwner | State::WriteOwner, Access::Read)
            | (State::WriteOwner, Access::Write) => self.grant(access, out),
            (State::ReadOwner, Access::Write) => {
                self.wanted = Some(access);
                self.invalidate_copies(None, out);
            }
            (State::WaitAcks, _) => {
                // Handing ownership over: ask for it back once it is gone.
                self.wanted = Some(access);
            }
            (State::ReadCopy | State::InvCopy, _) => {
                if self.state == State::ReadCopy {
                    out(Action::DropContents);
                }
                self.wanted = Some(access);
                self.ask(access, out);
            }
            (State::WaitRead | State::WaitWrite, _) => return Err(Error::Busy),
        }
        Ok(())
    }

    /// Sends the request for the wanted access to the probable owner.
    fn ask(&mut self, access: Access, out: &mut dyn FnMut(Action)) {
        let to = self.hint;
        match access {
            Access::Read => {
                self.state = State::WaitRead;
                self.invalidators.drain_each(&mut |_| {});
                Self::send(out, to, MsgKind::ReadReq, self.me, 0, self.token);
            }
            Access::Write => {
                self.state = State::WaitWrite;
                // The last node to ask for ownership is where requests
                // queue from now on.
                self.hint = self.me;
                Self::send(out, to, MsgKind::WriteReq, self.me, 0, self.token);
            }
        }
    }

    /// Ends the held local access.  A write's changes are in the contents
    /// the caller keeps; waiting requests are served now.  `NoMemory` here
    /// means the access did end but a waiting request could not be served
    /// yet: [`Object::poll`] later.
    pub fn release(&mut self, out: &mut dyn FnMut(Action)) -> Result<(), Error> {
        if self.held.take().is_none() {
            return Err(Error::NotHeld);
        }
        if let Some(from) = self.deferred_ack.take() {
            self.state = State::InvCopy;
            out(Action::DropContents);
            Self::send(out, from, MsgKind::InvAck, self.me, 0, 0);
        }
        self.serve_queue(out)
    }

    /// Serves requests still queued after an earlier `NoMemory`.
    pub fn poll(&mut self, out: &mut dyn FnMut(Action)) -> Result<(), Error> {
        self.serve_queue(out)
    }

    /// Whether this node serves requests right now.
    fn serving(&self) -> bool {
        self.held.is_none()
            && matches!(
                self.state,
                State::InvOwner | State::ReadOwner | State::WriteOwner
            )
    }

    fn first_touch(&mut self, out: &mut dyn FnMut(Action)) {
        if self.state == State::InvOwner {
            out(Action::FirstTouch);
            self.state = State::WriteOwner;
        }
    }

    /// Serves one request at a serving owner.
    fn serve(&mut self, req: Request, out: &mut dyn FnMut(Action)) -> Result<(), Error> {
        match req.access {
            Access::Read => {
                self.copyset.insert(req.node)?;
                self.first_touch(out);
                self.state = State::ReadOwner;
                Self::send(
                    out,
                    req.node,
                    MsgKind::Copy,
                    self.me,
                    self.version,
                    req.token,
                );
            }
            Access::Write => {
                self.first_touch(out);
                self.hint = req.node;
                self.copyset.remove(req.node);
                self.invalidate_copies(Some((req.node, req.token)), out);
            }
        }
        Ok(())
    }

    /// Invalidates every copy before a write (here, or at `transfer_to`:
    /// the requester and its token).  The copyset keeps each node until it
    /// acknowledges.
    fn invalidate_copies(
        &mut self,
        transfer_to: Option<(NodeId, u64)>,
        out: &mut dyn FnMut(Action),
    ) {
        let (me, next) = (self.me, self.version.saturating_add(1));
        self.copyset.for_each(&mut |node| {
            out(Action::Send {
                to: node,
                msg: Msg {
                    kind: MsgKind::Invalidate,
                    node: me,
                    version: next,
                    token: 0,
                },
            });
        });
        self.transfer_to = transfer_to;
        self.state = State::WaitAcks;
        if self.copyset.is_empty() {
            self.acks_done(out);
        }
    }

    /// Every copy is gone: write, or hand ownership over.
    fn acks_done(&mut self, out: &mut dyn FnMut(Action)) {
        match self.transfer_to.take() {
            None => {
                self.state = State::WriteOwner;
                self.grant(Access::Write, out);
            }
            Some((to, token)) => {
                Self::send(out, to, MsgKind::Ownership, self.me, self.version, token);
                out(Action::DropContents);
                self.state = State::InvCopy;
                // Whatever was queued goes after the new owner.
                while let Some(req) = self.queue.pop_front() {
                    self.forward(req, out);
                }
                if let Some(access) = self.wanted {
                    self.ask(access, out);
                }
            }
        }
    }

    fn serve_queue(&mut self, out: &mut dyn FnMut(Action)) -> Result<(), Error> {
        while let Some(req) = self.queue.front() {
            if !self.serving() {
                break;
            }
            if req.access == Access::Read {
                // May fail (copyset full): then the request stays queued.
                self.serve(req, out)?;
                self.queue.pop_front();
            } else {
                // Cannot fail; off the queue first, as handing ownership
                // over forwards what is still queued.
                self.queue.pop_front();
                self.serve(req, out)?;
            }
        }
        if !self.state.is_owner() && self.state != State::WaitWrite {
            while let Some(req) = self.queue.pop_front() {
                self.forward(req, out);
            }
        }
        Ok(())
    }

    /// Passes `req` on to the probable owner (a write request makes its
    /// requester the probable owner).
    fn forward(&mut self, req: Request, out: &mut dyn FnMut(Action)) {
        let kind = match req.access {
            Access::Read => MsgKind::ReadReq,
            Access::Write => MsgKind::WriteReq,
        };
        Self::send(out, self.hint, kind, req.node, 0, req.token);
        if req.access == Access::Write {
            self.hint = req.node;
        }
    }

    /// Handles a message from another node.
    pub fn on_message(&mut self, msg: Msg, out: &mut dyn FnMut(Action)) -> Result<(), Error> {
        if msg.version == u64::MAX || msg.node == self.me {
            // No node gets there (the versions that follow would not
            // grow), and no node sends to itself or has its own request
            // come back.
            return Err(Error::Unexpected);
        }
        match msg.kind {
            MsgKind::ReadReq | MsgKind::WriteReq => {
                let access = if msg.kind == MsgKind::ReadReq {
                    Access::Read
                } else {
                    Access::Write
                };
                self.on_request(
                    Request {
                        access,
                        node: msg.node,
                        token: msg.token,
                    },
                    out,
                )
            }
            MsgKind::Copy => {
                // Only while waiting for one, and only the answer to this
                // node's request: who serves it is not known here (it was
                // forwarded along probable owners), but the server sends
                // the request's token back.
                if self.state != State::WaitRead {
                    return Err(Error::Unexpected);
                }
                if msg.token != self.token {
                    return Err(Error::BadToken);
                }
                if self.invalidators.contains(msg.node) {
                    // Crossed the invalidation of its version: ask again
                    // (the same request: its token is known on its path
                    // already).
                    self.invalidators.drain_each(&mut |_| {});
                    Self::send(out, self.hint, MsgKind::ReadReq, self.me, 0, self.token);
                    return Ok(());
                }
                out(Action::Install);
                self.invalidators.drain_each(&mut |_| {});
                self.copy_from = Some(msg.node);
                self.version = msg.version;
                self.state = State::ReadCopy;
                self.grant(Access::Read, out);
                Ok(())
            }
            MsgKind::Ownership => {
                // Only while waiting for it, with the request's token (its
                // sender is not known here either).
                if self.state != State::WaitWrite {
                    return Err(Error::Unexpected);
                }
                if msg.token != self.token {
                    return Err(Error::BadToken);
                }
                out(Action::Install);
                // The owner that held the dropped copy served this write
                // without invalidating it, or invalidated it already.
                self.copy_from = None;
                self.version = msg.version;
                self.state = State::WriteOwner;
                self.grant(Access::Write, out);
                Ok(())
            }
            MsgKind::Refused => {
                // Only while waiting for an answer, and only for this
                // node's request (the node that refused it is not known
                // here either).
                let access = match self.state {
                    State::WaitRead => Access::Read,
                    State::WaitWrite => Access::Write,
                    _ => return Err(Error::Unexpected),
                };
                if msg.token != self.token {
                    return Err(Error::BadToken);
                }
                self.on_refused(msg.node, access, out);
                Ok(())
            }
            MsgKind::Invalidate => self.on_invalidate(msg.node, out),
            MsgKind::InvAck => {
                // Only from a node invalidated and not heard from since.
                if self.state != State::WaitAcks || !self.copyset.contains(msg.node) {
                    return Err(Error::Unexpected);
                }
                self.copyset.remove(msg.node);
                if self.copyset.is_empty() {
                    self.acks_done(out);
                }
                Ok(())
            }
        }
    }

    /// An invalidation from `from`.  Only the owner whose copyset holds
    /// this node sends one, once: the node its copy came from (ownership
    /// leaves a node only after every copy acknowledged its invalidation,
    /// so that node is still the owner).  While waiting for a read copy,
    /// the owner serving the request is not known: any node may
    /// invalidate, but only the copies from that node become stale.
    fn on_invalidate(&mut self, from: NodeId, out: &mut dyn FnMut(Action)) -> Result<(), Error> {
        match self.state {
            State::WaitRead => {
                self.invalidators.insert(from)?;
                if self.copy_from == Some(from) {
                    // The copy dropped before a refused write request.
                    self.copy_from = None;
                }
            }
            State::ReadCopy | State::WaitWrite | State::InvCopy if self.copy_from == Some(from) => {
                self.copy_from = None;
                if self.state == State::ReadCopy {
                    if self.held.is_some() {
                        // Acknowledged when the local read ends.
                        self.deferred_ack = Some(from);
                        return Ok(());
                    }
                    self.state = State::InvCopy;
                    out(Action::DropContents);
                }
            }
            _ => return Err(Error::Unexpected),
        }
        Self::send(out, from, MsgKind::InvAck, self.me, 0, 0);
        Ok(())
    }

    /// This node's request for `access` was refused by `by`: back to no
    /// copy, nothing asked for, and the local access fails.
    fn on_refused(&mut self, by: NodeId, access: Access, out: &mut dyn FnMut(Action)) {
        self.state = State::InvCopy;
        self.wanted = None;
        self.invalidators.drain_each(&mut |_| {});
        if access == Access::Write {
            // The nodes the request passed point here, and this node to
            // itself or to the writer queued behind it: point to where the
            // request ended (a node that does not know the object, so
            // whose chain ends at the home) and pass on what queued here,
            // in order.  A copy dropped for the request keeps `copy_from`:
            // its owner still invalidates it.
            self.hint = by;
            while let Some(req) = self.queue.pop_front() {
                self.forward(req, out);
            }
        }
        out(Action::Refused(access));
    }

    fn on_request(&mut self, req: Request, out: &mut dyn FnMut(Action)) -> Result<(), Error> {
        if self.serving() && self.queue.front().is_none() {
            return self.serve(req, out);
        }
        // The owner (busy) or the last node to ask for ownership: the
        // request waits here for this node's turn.
        let queues_here = self.hint == self.me
            && (self.state.is_owner() || self.state == State::WaitWrite)
            && self.transfer_to.is_none();
        if queues_here {
            self.queue.push_back(req)?;
            if req.access == Access::Write {
                self.hint = req.node;
            }
            return Ok(());
        }
        if self.hint == self.me || self.hint == req.node {
            // Nowhere to go, or back to where it came from.
            return Err(Error::Unexpected);
        }
        self.forward(req, out);
        Ok(())
    }
}
