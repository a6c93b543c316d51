// SPDX-License-Identifier: GPL-2.0

//! Plug-ins: interfaces declared once, with the ION-side dispatcher and the
//! CN-side client stubs generated from the declaration.
//!
//! As in ZOID, where a plug-in is a C header whose prototypes carry
//! annotations (`in:obj`, `out:ptr`, `in:str`, `out:arr:size=+1`,
//! `:zerocopy`, `:nullok`, ...) and a generator writes both sides, a zoid
//! plug-in is one `zoid_plugin!` invocation:
//!
//! ```text
//! zoid_plugin! {
//!     zoid = super::super;                  // path from here to `zoid`
//!     plugin(id = 1, name = "ztest");
//!     /// Does nothing (null-call latency).
//!     fn null() = 1;
//!     /// Copies `data` into `out_buf`, returns the bytes copied.
//!     fn echo(data: in bytes, out_buf: out bytes[cap, len = ret], cap: in u32) = 2;
//!     fn add(a: in i64, b: in i64, sum: out i64) = 3;
//!     fn maybe(s: in str nullok, v: in u32 nullok) = 6;
//! }
//! ```
//!
//! # Grammar
//!
//! ```text
//! invocation := "zoid" "=" PATH ";" body
//! body       := "plugin" "(" "id" "=" EXPR "," "name" "=" LITERAL ")" ";" function*
//!             | ATTR* VIS "mod" IDENT "(" "id" "=" EXPR "," "name" "=" LITERAL ")"
//!               "{" function* "}"
//! function   := ATTR* "fn" IDENT "(" [ arg ("," arg)* [","] ] ")" "=" LITERAL ";"
//! arg        := IDENT ":" mode
//! mode       := "in" TYPE ["nullok"]        ZOID in:obj / in:ptr (:nullok)
//!             | "out" TYPE                  out:ptr
//!             | "inout" TYPE                inout:ptr
//!             | "in" "str" ["nullok"]       in:str (:nullok)
//!             | "in" "bytes"                in:arr of bytes, :zerocopy
//!             | "out" "bytes" "[" SIZE "]"  out:arr:size=SIZE, :zerocopy
//!             | "out" "bytes" "[" SIZE "," "len" "=" "ret" "]"
//! ```
//!
//! * `PATH` names the `zoid` module as seen from the invoking module, as a
//!   relative path (`super`, `super::super`, an imported name); never
//!   `crate::`, which is a different crate in the host build and in the
//!   kernel modules.
//! * The first form puts the generated items into the invoking module
//!   (a file per plug-in: `plugins/ztest.rs` is `zoid::plugins::ztest`);
//!   the second wraps them in `mod IDENT`, which sees the invoking
//!   module's names through `use super::*`.
//! * `TYPE` is one identifier naming a [`Wire`] type in scope (`u32`,
//!   `i64`, `bool`, a `wire_struct!`); `out` and `inout` types must also be
//!   `Default` and `Clone`.  Types may not be named `T` or `S` (the
//!   generic parameters of the stubs and of `dispatch`).
//! * `SIZE` names an `in u32` argument of the same function (checked by
//!   the compiler in the client stub).  A function has at most one
//!   `out bytes` (a second one is a compile error).
//! * Function ids (`LITERAL`, a `u16`) must be unique within the plug-in
//!   (a compile error otherwise).  Doc comments on functions go to both the
//!   server method and the client stub.
//!
//! # Generated items
//!
//! * `pub const ID: u16`, `pub const NAME: &str`, `pub mod func` with one
//!   `pub const <function>: u16` per function, `pub const FUNCTIONS:
//!   &[(u16, &str)]` (id and name, in declaration order) and `pub fn
//!   function_name(u16) -> Option<&'static str>`.
//! * `pub fn reply_is_ret_only(u16) -> bool`: whether a function's reply is
//!   `ret` alone, so that a server may defer it and answer later with
//!   [`ret_reply`].
//! * `pub trait Server { type Ctx: ?Sized; fn <function>(&self, ctx:
//!   &Self::Ctx, <args>) -> CallResult; ... }`, the ION's implementation.
//! * `pub fn dispatch<S: Server + ?Sized>(srv: &S, ctx: &S::Ctx, function:
//!   u16, args: &[u8], reply: &mut [u8]) -> Result<Reply, DispatchError>`.
//! * `pub mod client` with `pub fn <function><T: Transport + ?Sized>(t: &T,
//!   <args>) -> Result<i64, CallError>` per function.
//!
//! Argument types, the same in the server methods and the client stubs:
//!
//! | mode                    | type              | server gets                             |
//! |-------------------------|-------------------|-----------------------------------------|
//! | `in T`                  | `T`               | the decoded value                       |
//! | `in T nullok`           | `Option<T>`       |                                         |
//! | `out T`                 | `&mut T`          | `T::default()`, sent back after the call |
//! | `inout T`               | `&mut T`          | the decoded value, sent back after the call |
//! | `in str`                | `&[u8]`           | borrowed from the request, NUL-free, at most `MAX_STR` |
//! | `in str nullok`         | `Option<&[u8]>`   |                                         |
//! | `in bytes`              | `&[u8]`           | borrowed from the request (zero copy)   |
//! | `out bytes[SIZE, ..]`   | `&mut [u8]`       | `SIZE` bytes of the reply buffer (zero copy; zeroed first for `out bytes[SIZE]`, which is sent whole; with `len = ret` not zeroed: the server must have written the first `min(ret, SIZE)` bytes, which are sent) |
//!
//! # Encoding
//!
//! Request arguments: every `in`, `inout`, `in str` and `in bytes`
//! argument in declaration order ([`super::marshal`]; `out` arguments are
//! not sent, `SIZE` travels as its own `in u32`).
//!
//! Reply (header `errno` 0): `ret: i64`, every `out` / `inout` value in
//! declaration order, then, if the function has an `out bytes`, `u32`
//! length and the bytes: all `SIZE` bytes, or with `len = ret` `min(ret,
//! SIZE)` bytes if `ret >= 0` and none if `ret < 0`.  The array is last so
//! that it is the tail of the reply buffer: the server writes into it in
//! place and the scalars in front are encoded after the call.  A server
//! returning `Err(errno)` produces a reply with that errno and no
//! arguments.
//!
//! Every function returns an `i64` like a system call; an `Err` is a
//! positive errno ([`CallResult`]).

use super::errno;
use super::marshal::{Decoder, Encoder, MarshalError};

#[cfg(doc)]
use super::marshal::Wire;

/// What a server function returns: `Ok(ret)` (a system call's return
/// value, sent to the caller) or `Err(errno)` (a positive errno; anything
/// else is sent as `EIO`).
pub type CallResult = Result<i64, i32>;

/// Bytes of the `ret` value at the start of every successful reply.
pub const REPLY_RET_LEN: usize = 8;

/// A reply laid out by a plug-in's `dispatch`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reply {
    /// Bytes of reply arguments written at the start of the reply buffer
    /// (the reply header's `arg_len`); 0 when `errno` is not.
    pub len: usize,
    /// The reply header's `errno`: 0 or a positive errno.
    pub errno: i32,
}

impl Reply {
    /// A successful reply of `len` bytes.
    pub const fn ok(len: usize) -> Self {
        Self { len, errno: 0 }
    }

    /// A failed reply: no arguments, `errno` made valid with
    /// [`errno::sanitize`].
    pub const fn error(errno: i32) -> Self {
        Self {
            len: 0,
            errno: errno::sanitize(errno),
        }
    }
}

/// Why `dispatch` could not run a call.  The server was not called (the
/// ION answers with [`DispatchError::errno`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DispatchError {
    /// The plug-in has no function with this id.
    UnknownFunction,
    /// The arguments are malformed: truncated, trailing bytes, a bad
    /// string or bool.
    Marshal(MarshalError),
    /// The reply (its fixed part and any `out bytes` array) does not fit
    /// the reply buffer, which needs `need` bytes (0: unknown, an external
    /// plug-in's refusal).  A server may call again with a buffer that
    /// large, or send the reply straight from a buffer it sized so.
    ReplyTooLarge {
        /// Bytes of reply buffer the call needs (saturating).
        need: usize,
    },
    /// The plug-in refused the call before running it with this positive
    /// errno (an external plug-in's own argument checks).
    Refused(i32),
}

impl DispatchError {
    /// The positive errno reporting this error: `ENOSYS` for an unknown
    /// function, `E2BIG` for a reply too large, a refusal's own errno (made
    /// valid with [`errno::sanitize`]), [`MarshalError::errno`]
    /// otherwise.
    pub const fn errno(&self) -> i32 {
        match self {
            Self::UnknownFunction => errno::ENOSYS,
            Self::Marshal(e) => e.errno(),
            Self::ReplyTooLarge { .. } => errno::E2BIG,
            Self::Refused(e) => errno::sanitize(*e),
        }
    }
}

impl From<MarshalError> for DispatchError {
    fn from(e: MarshalError) -> Self {
        Self::Marshal(e)
    }
}

/// Why a client stub's call failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CallError {
    /// The server (or the ION's dispatch) answered with this errno.
    Errno(i32),
    /// The arguments could not be encoded (a string with a NUL, an out
    /// array larger than its buffer, ...) or the reply was malformed.
    Marshal(MarshalError),
    /// The transport failed (positive errno: no memory, peer gone, ...).
    Transport(i32),
}

impl CallError {
    /// The positive errno reporting this error.
    pub const fn errno(&self) -> i32 {
        match self {
            Self::Errno(e) | Self::Transport(e) => *e,
            Self::Marshal(e) => e.errno(),
        }
    }
}

impl From<MarshalError> for CallError {
    fn from(e: MarshalError) -> Self {
        Self::Marshal(e)
    }
}

/// The CN side's way to the ION, used by every client stub.
pub trait Transport {
    /// Runs one call of `function` of `plugin`.
    ///
    /// The transport sizes a request buffer by running `encode` on
    /// [`Encoder::measuring`], runs `encode` again on the buffer (both runs
    /// produce the same bytes; a failure is returned as
    /// `CallError::Marshal`), sends the call and waits for the reply.  On
    /// a reply with `errno != 0` it returns `Err(CallError::Errno(errno))`
    /// without calling `decode`.  Otherwise it calls `decode` once on a
    /// [`Decoder`] over the reply's arguments, then checks
    /// [`Decoder::finish`] (a decode failure or trailing bytes are
    /// `CallError::Marshal`).  [`encode_args`] and [`decode_reply_args`]
    /// do these steps.
    ///
    /// Out values the stub passed in are unspecified after an error.
    ///
    /// A generated stub calls `call` exactly once, after its own argument
    /// checks, returns an error from it unchanged, and does nothing else
    /// afterwards: `decode` alone writes its `out` arguments.  So a stub
    /// can run in two halves (an asynchronous call): once with a transport
    /// that only encodes and sends, returning an error, and later with one
    /// that ignores `encode` and decodes the reply that came.
    fn call(
        &self,
        plugin: u16,
        function: u16,
        encode: &dyn Fn(&mut Encoder<'_>) -> Result<(), MarshalError>,
        decode: &mut dyn FnMut(&mut Decoder<'_>) -> Result<(), MarshalError>,
    ) -> Result<(), CallError>;
}

/// Bytes `encode` produces (a transport sizes its request buffer with it).
pub fn measure_args(
    encode: &dyn Fn(&mut Encoder<'_>) -> Result<(), MarshalError>,
) -> Result<usize, CallError> {
    let mut e = Encoder::measuring();
    encode(&mut e)?;
    Ok(e.len())
}

/// Runs `encode` into `buf`; returns the bytes written.
pub fn encode_args(
    encode: &dyn Fn(&mut Encoder<'_>) -> Result<(), MarshalError>,
    buf: &mut [u8],
) -> Result<usize, CallError> {
    let mut e = Encoder::new(buf);
    encode(&mut e)?;
    Ok(e.len())
}

/// Runs `decode` over a successful reply's arguments and checks that it
/// consumed them all.
pub fn decode_reply_args(
    args: &[u8],
    decode: &mut dyn FnMut(&mut Decoder<'_>) -> Result<(), MarshalError>,
) -> Result<(), CallError> {
    let mut d = Decoder::new(args);
    decode(&mut d)?;
    d.finish()?;
    Ok(())
}

/// Lays out, at the start of `reply`, the reply of a function whose reply
/// is `ret` alone (the generated `reply_is_ret_only`): what a server that
/// deferred a call sends when it completes.  `reply` must hold at least
/// [`REPLY_RET_LEN`] bytes.
pub fn ret_reply(result: CallResult, reply: &mut [u8]) -> Result<Reply, MarshalError> {
    match result {
        Err(e) => Ok(Reply::error(e)),
        Ok(ret) => {
            let mut e = Encoder::new(reply);
            e.put_i64(ret)?;
            Ok(Reply::ok(e.len()))
        }
    }
}

/// Whether the function ids of a plug-in's `FUNCTIONS` are distinct
/// (evaluated at compile time by `zoid_plugin!`).
pub const fn ids_unique(functions: &[(u16, &str)]) -> bool {
    let mut i = 0;
    while i < functions.len() {
        let mut j = i + 1;
        while j < functions.len() {
            if functions[i].0 == functions[j].0 {
                return false;
            }
            j += 1;
        }
        i += 1;
    }
    true
}

/// The name of function `id` in a plug-in's `FUNCTIONS`.
pub fn function_name(functions: &[(u16, &'static str)], id: u16) -> Option<&'static str> {
    functions.iter().find(|f| f.0 == id).map(|f| f.1)
}

/// Bytes of an `out bytes[size, len = ret]` array sent back for `ret`:
/// `min(ret, size)` if `ret >= 0`, 0 otherwise.
pub const fn out_len(ret: i64, size: u32) -> u32 {
    if ret < 0 {
        0
    } else if ret < size as i64 {
        ret as u32
    } else {
        size
    }
}

/// Declares a plug-in; see the [module documentation](self).
macro_rules! zoid_plugin {
    // ---- Entry: items in the invoking module.
    (
        zoid = $z0:ident $(:: $zn:ident)* ;
        plugin(id = $id:expr, name = $pname:literal $(,)?) ;
        $(
            $(#[$fmeta:meta])*
            fn $f:ident ( $($a:tt)* ) = $fid:literal ;
        )*
    ) => {
        #[allow(unused_imports)]
        use $z0 $(:: $zn)* as __zoid;

        /// The plug-in's id (the call header's `plugin`).
        pub const ID: u16 = $id;
        /// The plug-in's name.
        pub const NAME: &str = $pname;

        /// Function ids (the call header's `function`).
        #[allow(non_upper_case_globals)]
        pub mod func {
            $(
                #[doc = concat!("Id of `", stringify!($f), "`.")]
                pub const $f: u16 = $fid;
            )*
        }

        /// Every function: id and name, in declaration order.
        pub const FUNCTIONS: &[(u16, &str)] = &[$((func::$f, stringify!($f))),*];

        const _: () = assert!(
            __zoid::plugin::ids_unique(FUNCTIONS),
            "zoid_plugin!: two functions share an id"
        );

        /// The name of function `function`, `None` if there is none.
        pub fn function_name(function: u16) -> ::core::option::Option<&'static str> {
            __zoid::plugin::function_name(FUNCTIONS, function)
        }

        /// Whether function `function`'s reply is `ret` alone (no `out`,
        /// `inout` or `out bytes` arguments), so that a server may answer
        /// it later with [`ret_reply`](__zoid::plugin::ret_reply) (a
        /// deferred reply).  `false` for an unknown function.
        #[allow(dead_code)]
        pub fn reply_is_ret_only(function: u16) -> bool {
            match function {
                $(
                    func::$f => zoid_plugin! { @norm [@ret_only] [] [] $($a)* },
                )*
                _ => false,
            }
        }

        /// The ION's implementation of the plug-in, called by [`dispatch`].
        pub trait Server {
            /// Per-call context (the calling CN and process, credentials).
            type Ctx: ?Sized;

            $(
                zoid_plugin! {
                    @norm [@server_fn [$(#[$fmeta])*] $f $fid ($($a)*)] [] [] $($a)*
                }
            )*
        }

        /// Runs call `function` with the marshalled `args` on `srv` and
        /// lays the reply out at the start of `reply`.
        ///
        /// The arguments are decoded and checked (completely, no bytes
        /// left over) and the reply's room (with any `out bytes` array)
        /// checked before the server runs; errors are reported without
        /// calling it.
        pub fn dispatch<S: Server + ?Sized>(
            srv: &S,
            ctx: &S::Ctx,
            function: u16,
            args: &[u8],
            reply: &mut [u8],
        ) -> ::core::result::Result<__zoid::plugin::Reply, __zoid::plugin::DispatchError> {
            match function {
                $(
                    func::$f => {
                        // One function per call, never inlined: each keeps
                        // its decoded arguments in its own stack frame
                        // instead of all of them adding up in this one's
                        // (8 KiB kernel stacks on ppc32).
                        #[inline(never)]
                        fn $f<S: Server + ?Sized>(
                            srv: &S,
                            ctx: &S::Ctx,
                            args: &[u8],
                            reply: &mut [u8],
                        ) -> ::core::result::Result<
                            __zoid::plugin::Reply,
                            __zoid::plugin::DispatchError,
                        > {
                            zoid_plugin! {
                                @norm [@dispatch_fn [srv ctx args reply] $f] [] [] $($a)*
                            }
                        }
                        $f(srv, ctx, args, reply)
                    }
                )*
                _ => Err(__zoid::plugin::DispatchError::UnknownFunction),
            }
        }

        /// CN-side stubs: one function per plug-in function, calling it
        /// through a [`Transport`](__zoid::plugin::Transport).
        pub mod client {
            #[allow(unused_imports)]
            use super::*;

            $(
                zoid_plugin! {
                    @norm [@client_fn [$(#[$fmeta])*] $f $fid ($($a)*)] [] [] $($a)*
                }
            )*
        }
    };

    // ---- Entry: items in a new module.
    (
        zoid = $z0:ident $(:: $zn:ident)* ;
        $(#[$meta:meta])*
        $vis:vis mod $name:ident (id = $id:expr, name = $pname:literal $(,)?) {
            $($body:tt)*
        }
    ) => {
        $(#[$meta])*
        $vis mod $name {
            #[allow(unused_imports)]
            use super::*;

            zoid_plugin! {
                @child_path [$z0 $(:: $zn)*] [plugin(id = $id, name = $pname);] $($body)*
            }
        }
    };

    // The path to `zoid` seen from one module further down.
    (@child_path [self $(:: $zn:ident)*] [$($p:tt)*] $($body:tt)*) => {
        zoid_plugin! { zoid = super $(:: $zn)*; $($p)* $($body)* }
    };
    (@child_path [super $(:: $zn:ident)*] [$($p:tt)*] $($body:tt)*) => {
        zoid_plugin! { zoid = super::super $(:: $zn)*; $($p)* $($body)* }
    };
    (@child_path [$z0:ident $(:: $zn:ident)*] [$($p:tt)*] $($body:tt)*) => {
        zoid_plugin! { zoid = super::$z0 $(:: $zn)*; $($p)* $($body)* }
    };

    // ---- Argument normalisation: `@norm [continuation] [args] [out bytes] tokens`.
    // Each argument becomes `{ name kind (params) }`; the out bytes
    // argument, if any, is also `[name size mode]`.  At the end the
    // continuation is invoked with both lists appended.
    (@norm [$($k:tt)*] $acc:tt $ob:tt $(,)?) => {
        zoid_plugin! { $($k)* $acc $ob }
    };
    (@norm $k:tt [$($acc:tt)*] $ob:tt $n:ident : in str nullok $(, $($r:tt)*)?) => {
        zoid_plugin! { @norm $k [$($acc)* { $n in_str_opt () }] $ob $($($r)*)? }
    };
    (@norm $k:tt [$($acc:tt)*] $ob:tt $n:ident : in str $(, $($r:tt)*)?) => {
        zoid_plugin! { @norm $k [$($acc)* { $n in_str () }] $ob $($($r)*)? }
    };
    (@norm $k:tt $acc:tt $ob:tt $n:ident : in bytes nullok $($r:tt)*) => {
        compile_error!(concat!("zoid_plugin!: `", stringify!($n), "`: `in bytes` cannot be `nullok`"));
    };
    (@norm $k:tt [$($acc:tt)*] $ob:tt $n:ident : in bytes $(, $($r:tt)*)?) => {
        zoid_plugin! { @norm $k [$($acc)* { $n in_bytes () }] $ob $($($r)*)? }
    };
    (@norm $k:tt [$($acc:tt)*] $ob:tt $n:ident : in $t:ident nullok $(, $($r:tt)*)?) => {
        zoid_plugin! { @norm $k [$($acc)* { $n in_opt ($t) }] $ob $($($r)*)? }
    };
    (@norm $k:tt [$($acc:tt)*] $ob:tt $n:ident : in $t:ident $(, $($r:tt)*)?) => {
        zoid_plugin! { @norm $k [$($acc)* { $n in_obj ($t) }] $ob $($($r)*)? }
    };
    (@norm $k:tt $acc:tt [$($ob:tt)+] $n:ident : out bytes $($r:tt)*) => {
        compile_error!(concat!(
            "zoid_plugin!: `", stringify!($n), "`: at most one `out bytes` per function"
        ));
    };
    (@norm $k:tt [$($acc:tt)*] [] $n:ident : out bytes [$size:ident] $(, $($r:tt)*)?) => {
        zoid_plugin! {
            @norm $k [$($acc)* { $n out_bytes ($size all) }] [$n $size all] $($($r)*)?
        }
    };
    (@norm $k:tt [$($acc:tt)*] [] $n:ident : out bytes [$size:ident, len = ret]
     $(, $($r:tt)*)?) => {
        zoid_plugin! {
            @norm $k [$($acc)* { $n out_bytes ($size ret) }] [$n $size ret] $($($r)*)?
        }
    };
    (@norm $k:tt $acc:tt $ob:tt $n:ident : $mode:ident str $($r:tt)*) => {
        compile_error!(concat!("zoid_plugin!: `", stringify!($n), "`: strings are `in` only"));
    };
    (@norm $k:tt $acc:tt $ob:tt $n:ident : inout bytes $($r:tt)*) => {
        compile_error!(concat!(
            "zoid_plugin!: `", stringify!($n), "`: `inout bytes` is not supported"
        ));
    };
    (@norm $k:tt [$($acc:tt)*] $ob:tt $n:ident : out $t:ident $(, $($r:tt)*)?) => {
        zoid_plugin! { @norm $k [$($acc)* { $n out_obj ($t) }] $ob $($($r)*)? }
    };
    (@norm $k:tt [$($acc:tt)*] $ob:tt $n:ident : inout $t:ident $(, $($r:tt)*)?) => {
        zoid_plugin! { @norm $k [$($acc)* { $n inout ($t) }] $ob $($($r)*)? }
    };
    (@norm $k:tt $acc:tt $ob:tt $($bad:tt)+) => {
        compile_error!(concat!(
            "zoid_plugin!: cannot parse the argument at `", stringify!($($bad)+), "`"
        ));
    };

    // ---- Argument types (server methods and client stubs alike).
    (@ty in_obj ($t:ident)) => { $t };
    (@ty in_opt ($t:ident)) => { ::core::option::Option<$t> };
    (@ty out_obj ($t:ident)) => { &mut $t };
    (@ty inout ($t:ident)) => { &mut $t };
    (@ty in_str ()) => { &[u8] };
    (@ty in_str_opt ()) => { ::core::option::Option<&[u8]> };
    (@ty in_bytes ()) => { &[u8] };
    (@ty out_bytes $p:tt) => { &mut [u8] };

    // ---- Server trait method.
    (@server_fn [$($attr:tt)*] $f:ident $fid:literal ($($a:tt)*)
     [$({ $n:ident $kind:ident $p:tt })*] $ob:tt) => {
        $($attr)*
        #[doc = ""]
        #[doc = concat!(
            "Function ", stringify!($fid), ": `", stringify!($f), "(", stringify!($($a)*), ")`."
        )]
        #[allow(clippy::too_many_arguments)]
        fn $f(
            &self,
            ctx: &Self::Ctx
            $(, $n: zoid_plugin!(@ty $kind $p))*
        ) -> __zoid::plugin::CallResult;
    };

    // ---- Dispatch of one function (an expression).
    (@dispatch_fn [$srv:ident $ctx:ident $args:ident $reply:ident] $f:ident
     [$({ $n:ident $kind:ident $p:tt })*] $ob:tt) => {{
        let __d = &mut __zoid::marshal::Decoder::new($args);
        $( zoid_plugin!(@srv_decode __d $n $kind $p); )*
        __d.finish()?;
        let __fixed: usize =
            __zoid::plugin::REPLY_RET_LEN $(+ zoid_plugin!(@reply_size $kind $p))*;
        zoid_plugin!(@srv_call [$srv $ctx $reply __fixed] $f [$($n $kind)*] $ob)
    }};

    (@srv_decode $d:ident $n:ident in_obj ($t:ident)) => {
        let $n: $t = $d.get::<$t>()?;
    };
    (@srv_decode $d:ident $n:ident in_opt ($t:ident)) => {
        let $n: ::core::option::Option<$t> = $d.get_opt::<$t>()?;
    };
    (@srv_decode $d:ident $n:ident inout ($t:ident)) => {
        let mut $n: $t = $d.get::<$t>()?;
    };
    (@srv_decode $d:ident $n:ident out_obj ($t:ident)) => {
        let mut $n: $t = <$t as ::core::default::Default>::default();
    };
    (@srv_decode $d:ident $n:ident in_str ()) => {
        let $n: &[u8] = $d.get_str()?;
    };
    (@srv_decode $d:ident $n:ident in_str_opt ()) => {
        let $n: ::core::option::Option<&[u8]> = $d.get_opt_str()?;
    };
    (@srv_decode $d:ident $n:ident in_bytes ()) => {
        let $n: &[u8] = $d.get_bytes(usize::MAX)?;
    };
    (@srv_decode $d:ident $n:ident out_bytes $p:tt) => {};

    (@ret_only [$({ $n:ident $kind:ident $p:tt })*] []) => {
        0 $(+ zoid_plugin!(@reply_size $kind $p))* == 0
    };
    (@ret_only $acc:tt [$($ob:tt)+]) => { false };

    (@reply_size out_obj ($t:ident)) => { <$t as __zoid::marshal::Wire>::SIZE };
    (@reply_size inout ($t:ident)) => { <$t as __zoid::marshal::Wire>::SIZE };
    (@reply_size $kind:ident $p:tt) => { 0 };

    (@call_arg $n:ident out_obj) => { &mut $n };
    (@call_arg $n:ident inout) => { &mut $n };
    (@call_arg $n:ident $kind:ident) => { $n };

    (@srv_put $e:ident $n:ident out_obj) => { $e.put(&$n)?; };
    (@srv_put $e:ident $n:ident inout) => { $e.put(&$n)?; };
    (@srv_put $e:ident $n:ident $kind:ident) => {};

    // Before the call: an array sent whole is zeroed first, so bytes the
    // server leaves alone go back as zeros, never as what the (reused)
    // reply buffer held from an earlier call, perhaps another node's.  With
    // `len = ret` only the bytes the server says it wrote are sent.
    (@prefill all $ob:ident) => { $ob.fill(0); };
    (@prefill ret $ob:ident) => {};

    // Bytes of the out array sent for `ret` (a `u32`).
    (@sent all $ret:ident $cap:ident) => { $cap };
    (@sent ret $ret:ident $cap:ident) => { __zoid::plugin::out_len($ret, $cap) };

    // Without an out array: the reply is `ret` and the out values.
    (@srv_call [$srv:ident $ctx:ident $reply:ident $fixed:ident] $f:ident
     [$($n:ident $kind:ident)*] []) => {{
        let __head = $reply
            .get_mut(..$fixed)
            .ok_or(__zoid::plugin::DispatchError::ReplyTooLarge { need: $fixed })?;
        match $srv.$f($ctx $(, zoid_plugin!(@call_arg $n $kind))*) {
            Err(__errno) => Ok(__zoid::plugin::Reply::error(__errno)),
            Ok(__ret) => {
                let __e = &mut __zoid::marshal::Encoder::new(__head);
                __e.put_i64(__ret)?;
                $( zoid_plugin!(@srv_put __e $n $kind); )*
                Ok(__zoid::plugin::Reply::ok(__e.len()))
            }
        }
    }};

    // With an out array: it is carved from the reply buffer's tail.
    (@srv_call [$srv:ident $ctx:ident $reply:ident $fixed:ident] $f:ident
     [$($n:ident $kind:ident)*] [$ob:ident $size:ident $mode:ident]) => {{
        let __cap: u32 = $size;
        let __head_len = $fixed + 4;
        if $reply.len() < __head_len || $reply.len() - __head_len < __cap as usize {
            return Err(__zoid::plugin::DispatchError::ReplyTooLarge {
                need: __head_len.saturating_add(__cap as usize),
            });
        }
        let (__head, __tail) = $reply.split_at_mut(__head_len);
        let $ob: &mut [u8] = &mut __tail[..__cap as usize];
        zoid_plugin!(@prefill $mode $ob);
        match $srv.$f($ctx $(, zoid_plugin!(@call_arg $n $kind))*) {
            Err(__errno) => Ok(__zoid::plugin::Reply::error(__errno)),
            Ok(__ret) => {
                let __sent: u32 = zoid_plugin!(@sent $mode __ret __cap);
                let __e = &mut __zoid::marshal::Encoder::new(__head);
                __e.put_i64(__ret)?;
                $( zoid_plugin!(@srv_put __e $n $kind); )*
                __e.put_u32(__sent)?;
                Ok(__zoid::plugin::Reply::ok(__e.len() + __sent as usize))
            }
        }
    }};

    // ---- Client stub.
    (@client_fn [$($attr:tt)*] $f:ident $fid:literal ($($a:tt)*)
     [$({ $n:ident $kind:ident $p:tt })*] $ob:tt) => {
        $($attr)*
        #[doc = ""]
        #[doc = concat!(
            "Calls function ", stringify!($fid), ": `", stringify!($f), "(",
            stringify!($($a)*), ")`."
        )]
        #[allow(clippy::too_many_arguments)]
        pub fn $f<T: __zoid::plugin::Transport + ?Sized>(
            t: &T
            $(, $n: zoid_plugin!(@ty $kind $p))*
        ) -> ::core::result::Result<i64, __zoid::plugin::CallError> {
            zoid_plugin!(@client_check $ob);
            let mut __ret: i64 = 0;
            t.call(
                super::ID,
                super::func::$f,
                &{
                    $( zoid_plugin!(@client_copy $n $kind $p); )*
                    move |__e: &mut __zoid::marshal::Encoder<'_>|
                          -> ::core::result::Result<(), __zoid::marshal::MarshalError> {
                        $( zoid_plugin!(@client_put __e $n $kind); )*
                        Ok(())
                    }
                },
                &mut |__d: &mut __zoid::marshal::Decoder<'_>|
                      -> ::core::result::Result<(), __zoid::marshal::MarshalError> {
                    __ret = __d.get_i64()?;
                    $( zoid_plugin!(@client_get __d $n $kind $p); )*
                    zoid_plugin!(@client_get_bytes __d __ret $ob);
                    Ok(())
                },
            )?;
            Ok(__ret)
        }
    };

    (@client_check []) => {};
    (@client_check [$ob:ident $size:ident $mode:ident]) => {
        let __cap: u32 = $size;
        if __cap as usize > $ob.len() {
            return Err(__zoid::plugin::CallError::Marshal(
                __zoid::marshal::MarshalError::TooLong,
            ));
        }
    };

    // `inout` values are copied for the encoder, so that the decoder can
    // hold the caller's `&mut` at the same time.
    (@client_copy $n:ident inout ($t:ident)) => {
        let $n: $t = ::core::clone::Clone::clone(&*$n);
    };
    (@client_copy $n:ident $kind:ident $p:tt) => {};

    (@client_put $e:ident $n:ident in_obj) => { $e.put(&$n)?; };
    (@client_put $e:ident $n:ident in_opt) => { $e.put_opt($n.as_ref())?; };
    (@client_put $e:ident $n:ident inout) => { $e.put(&$n)?; };
    (@client_put $e:ident $n:ident in_str) => { $e.put_str($n)?; };
    (@client_put $e:ident $n:ident in_str_opt) => { $e.put_opt_str($n)?; };
    (@client_put $e:ident $n:ident in_bytes) => { $e.put_bytes($n)?; };
    (@client_put $e:ident $n:ident $kind:ident) => {};

    (@client_get $d:ident $n:ident out_obj ($t:ident)) => { *$n = $d.get::<$t>()?; };
    (@client_get $d:ident $n:ident inout ($t:ident)) => { *$n = $d.get::<$t>()?; };
    (@client_get $d:ident $n:ident $kind:ident $p:tt) => {};

    // The out array: exactly the bytes the reply must carry, copied into
    // the caller's buffer (whose size `@client_check` verified).
    (@client_get_bytes $d:ident $ret:ident []) => {};
    (@client_get_bytes $d:ident $ret:ident [$ob:ident $size:ident $mode:ident]) => {
        let __want: u32 = zoid_plugin!(@sent $mode $ret $size);
        let __got = $d.get_bytes(__want as usize)?;
        if __got.len() != __want as usize {
            return Err(__zoid::marshal::MarshalError::Truncated);
        }
        match $ob.get_mut(..__got.len()) {
            Some(__dst) => __dst.copy_from_slice(__got),
            None => return Err(__zoid::marshal::MarshalError::TooLong),
        }
    };
}

#[cfg(test)]
mod tests {
    use super::super::marshal::{Decoder, Encoder, MarshalError};
    use super::{CallError, Reply, Transport};
    use core::cell::Cell;

    zoid_plugin! {
        zoid = super::super;
        /// A plug-in declared in the module form.
        pub mod tiny (id = 9, name = "tiny") {
            /// Doubles.
            fn double(x: inout u32) = 4;
            fn get(buf: out bytes[n], n: in u32) = 5;
            /// Writes only the first byte of its array.
            fn lazy(buf: out bytes[n], n: in u32) = 6;
        }
    }

    struct Srv;

    impl tiny::Server for Srv {
        type Ctx = Cell<u32>;

        fn double(&self, ctx: &Cell<u32>, x: &mut u32) -> super::CallResult {
            ctx.set(ctx.get() + 1);
            *x = x.wrapping_mul(2);
            Ok(0)
        }

        fn get(&self, ctx: &Cell<u32>, buf: &mut [u8], n: u32) -> super::CallResult {
            ctx.set(ctx.get() + 1);
            buf.fill(0xab);
            Ok(i64::from(n))
        }

        fn lazy(&self, _ctx: &Cell<u32>, buf: &mut [u8], _n: u32) -> super::CallResult {
            if let Some(b) = buf.first_mut() {
                *b = 1;
            }
            Ok(0)
        }
    }

    /// Calls `tiny::dispatch` directly (no header).
    struct Loop<'a>(&'a Cell<u32>);

    impl Transport for Loop<'_> {
        fn call(
            &self,
            plugin: u16,
            function: u16,
            encode: &dyn Fn(&mut Encoder<'_>) -> Result<(), MarshalError>,
            decode: &mut dyn FnMut(&mut Decoder<'_>) -> Result<(), MarshalError>,
        ) -> Result<(), CallError> {
            assert_eq!(plugin, tiny::ID);
            let mut req = [0u8; 64];
            let n = super::encode_args(encode, &mut req)?;
            assert_eq!(super::measure_args(encode)?, n);
            // As a worker's reply buffer reused from an earlier call.
            let mut rep = [0x5au8; 64];
            match tiny::dispatch(&Srv, self.0, function, &req[..n], &mut rep) {
                Ok(Reply { errno: 0, len }) => super::decode_reply_args(&rep[..len], decode),
                Ok(r) => Err(CallError::Errno(r.errno)),
                Err(e) => Err(CallError::Errno(e.errno())),
            }
        }
    }

    #[test]
    fn module_form_works() {
        assert_eq!(tiny::ID, 9);
        assert_eq!(tiny::NAME, "tiny");
        assert_eq!(tiny::FUNCTIONS, &[(4, "double"), (5, "get"), (6, "lazy")]);
        assert_eq!(tiny::function_name(5), Some("get"));
        let calls = Cell::new(0);
        let t = Loop(&calls);
        let mut x = 21;
        assert_eq!(tiny::client::double(&t, &mut x), Ok(0));
        assert_eq!(x, 42);
        let mut buf = [0u8; 8];
        assert_eq!(tiny::client::get(&t, &mut buf, 3), Ok(3));
        assert_eq!(buf, [0xab, 0xab, 0xab, 0, 0, 0, 0, 0]);
        // What the server leaves alone of an array sent whole comes back
        // as zeros, not as the reply buffer's earlier bytes.
        assert_eq!(tiny::client::lazy(&t, &mut buf, 6), Ok(0));
        assert_eq!(buf, [1, 0, 0, 0, 0, 0, 0, 0]);
        // Larger than the caller's buffer: refused before sending.
        assert_eq!(
            tiny::client::get(&t, &mut buf, 9),
            Err(CallError::Marshal(MarshalError::TooLong))
        );
        // Larger than the reply buffer: refused before the server runs.
        assert_eq!(
            tiny::client::get(&t, &mut [0u8; 100], 100),
            Err(CallError::Errno(super::errno::E2BIG))
        );
        assert_eq!(calls.get(), 2);
    }

    /// The first half of a two-half call: keeps the request, fails.
    struct Send<'a>(&'a core::cell::RefCell<([u8; 64], usize)>);

    impl Transport for Send<'_> {
        fn call(
            &self,
            _plugin: u16,
            _function: u16,
            encode: &dyn Fn(&mut Encoder<'_>) -> Result<(), MarshalError>,
            _decode: &mut dyn FnMut(&mut Decoder<'_>) -> Result<(), MarshalError>,
        ) -> Result<(), CallError> {
            let mut r = self.0.borrow_mut();
            r.1 = super::encode_args(encode, &mut r.0)?;
            Err(CallError::Transport(115))
        }
    }

    /// The second half: runs the kept request, decodes, ignores `encode`.
    struct Finish<'a>(&'a core::cell::RefCell<([u8; 64], usize)>, &'a Cell<u32>);

    impl Transport for Finish<'_> {
        fn call(
            &self,
            _plugin: u16,
            function: u16,
            _encode: &dyn Fn(&mut Encoder<'_>) -> Result<(), MarshalError>,
            decode: &mut dyn FnMut(&mut Decoder<'_>) -> Result<(), MarshalError>,
        ) -> Result<(), CallError> {
            let r = self.0.borrow();
            let mut rep = [0u8; 64];
            match tiny::dispatch(&Srv, self.1, function, &r.0[..r.1], &mut rep) {
                Ok(Reply { errno: 0, len }) => super::decode_reply_args(&rep[..len], decode),
                Ok(r) => Err(CallError::Errno(r.errno)),
                Err(e) => Err(CallError::Errno(e.errno())),
            }
        }
    }

    #[test]
    fn stubs_run_in_two_halves() {
        let req = core::cell::RefCell::new(([0u8; 64], 0));
        let calls = Cell::new(0);
        // The first half sends 21 and leaves `x` alone; the second's
        // argument value does not matter (it is not sent again).
        let mut x = 21;
        assert_eq!(
            tiny::client::double(&Send(&req), &mut x),
            Err(CallError::Transport(115))
        );
        assert_eq!(x, 21);
        let mut y = 0;
        assert_eq!(tiny::client::double(&Finish(&req, &calls), &mut y), Ok(0));
        assert_eq!(y, 42);
        let mut buf = [7u8; 8];
        assert_eq!(
            tiny::client::get(&Send(&req), &mut buf, 4),
            Err(CallError::Transport(115))
        );
        assert_eq!(buf, [7; 8]);
        assert_eq!(tiny::client::get(&Finish(&req, &calls), &mut buf, 4), Ok(4));
        assert_eq!(buf, [0xab, 0xab, 0xab, 0xab, 7, 7, 7, 7]);
        assert_eq!(calls.get(), 2);
    }

    #[test]
    fn out_len_clamps() {
        assert_eq!(super::out_len(-1, 10), 0);
        assert_eq!(super::out_len(0, 10), 0);
        assert_eq!(super::out_len(7, 10), 7);
        assert_eq!(super::out_len(10, 10), 10);
        assert_eq!(super::out_len(i64::MAX, 10), 10);
        assert_eq!(super::out_len(i64::MAX, u32::MAX), u32::MAX);
    }
}
