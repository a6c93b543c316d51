// SPDX-License-Identifier: GPL-2.0

//! Allocation-free marshalling of call arguments and results.
//!
//! Values are laid out back to back, big-endian, without padding or
//! alignment:
//!
//! | value                          | encoding                                   |
//! |--------------------------------|--------------------------------------------|
//! | `u8`, `u16`, `u32`, `u64`      | 1, 2, 4, 8 bytes                           |
//! | `i32`, `i64`                   | 4, 8 bytes, two's complement               |
//! | `bool`                         | 1 byte, 0 or 1 (anything else: [`MarshalError::BadBool`]) |
//! | bytes                          | `u32` length, then the bytes               |
//! | string                         | as bytes; no NUL inside, at most [`MAX_STR`] bytes |
//! | optional value (`nullok`)      | `u8` presence marker 0 / 1, then the value if 1 |
//! | struct (`wire_struct!`)      | its fields in declaration order            |
//!
//! An [`Encoder`] writes into a caller's buffer; [`Encoder::measuring`]
//! counts the bytes an encoding needs without writing, so a caller can size
//! its buffer first.  A [`Decoder`] reads from a borrowed buffer and hands out
//! byte strings as sub-slices of it (zero copy).  Both check every length;
//! nothing here panics on any input.
//!
//! Fixed-size values implement [`Wire`]; `wire_struct!` declares a plain
//! struct of [`Wire`] fields that is itself [`Wire`]:
//!
//! ```text
//! wire_struct! {
//!     zoid = super::super;          // path from this module to `zoid`
//!     /// A point.
//!     pub struct Point {
//!         /// Horizontal.
//!         pub x: i32,
//!         /// Vertical.
//!         pub y: i32,
//!     }
//! }
//! ```
//!
//! The macro is textually scoped (`#[macro_use] mod marshal;` in
//! `zoid/mod.rs`), so it is available to the modules declared after
//! `marshal` inside `zoid`.  `zoid = <path>` names the `zoid` module as seen
//! from the invoking module (a relative path: `super::...`, `self`, or an
//! imported name; never `crate::`, which differs between the host crate and
//! the kernel modules).  The struct derives `Clone, Copy, Debug, Default,
//! PartialEq, Eq`, so every field type must too.

use super::errno;

/// Longest string [`Encoder::put_str`] and [`Decoder::get_str`] accept
/// (bytes, without a terminating NUL; `PATH_MAX`).
pub const MAX_STR: usize = 4096;

/// Why a value could not be encoded or decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MarshalError {
    /// Encoding: the output buffer is full.
    NoSpace,
    /// Decoding: the input ends inside a value.
    Truncated,
    /// A length above its limit: a string longer than [`MAX_STR`], a byte
    /// string longer than the decoder's `max` or than `u32` can say, an out
    /// array larger than the buffer it goes to.
    TooLong,
    /// A string with a NUL byte inside.
    BadString,
    /// A bool or presence marker that is neither 0 nor 1.
    BadBool,
    /// A value its type does not allow (a handle's length, bytes past it).
    BadValue,
    /// Decoding: bytes left over after the last value.
    Trailing,
}

impl MarshalError {
    /// The positive errno reporting this error: `NoSpace` and `TooLong` are
    /// `E2BIG`, `Truncated` and `Trailing` (a malformed message) `EBADMSG`,
    /// `BadString`, `BadBool` and `BadValue` (a malformed value) `EINVAL`.
    pub const fn errno(&self) -> i32 {
        match self {
            Self::NoSpace | Self::TooLong => errno::E2BIG,
            Self::Truncated | Self::Trailing => errno::EBADMSG,
            Self::BadString | Self::BadBool | Self::BadValue => errno::EINVAL,
        }
    }
}

/// Checks a string for [`Encoder::put_str`] / [`Decoder::get_str`].
fn check_str(s: &[u8]) -> Result<(), MarshalError> {
    if s.len() > MAX_STR {
        return Err(MarshalError::TooLong);
    }
    if s.contains(&0) {
        return Err(MarshalError::BadString);
    }
    Ok(())
}

/// Writes values into a buffer (or only counts them, see [`Encoder::measuring`]).
///
/// A failed `put_*` leaves the encoder as it was: nothing of the value is
/// written.
#[derive(Debug)]
pub struct Encoder<'a> {
    /// `None` when measuring.
    buf: Option<&'a mut [u8]>,
    len: usize,
}

impl<'a> Encoder<'a> {
    /// An encoder writing at the start of `buf`.
    pub fn new(buf: &'a mut [u8]) -> Self {
        Self {
            buf: Some(buf),
            len: 0,
        }
    }

    /// An encoder that writes nothing and only counts bytes: `len()` after
    /// encoding is the buffer size the encoding needs.  It never fails with
    /// [`MarshalError::NoSpace`] (short of `usize` overflowing); every
    /// other check (string contents, lengths) is made as when writing.
    pub fn measuring() -> Encoder<'static> {
        Encoder { buf: None, len: 0 }
    }

    /// Whether this encoder only counts.
    pub fn is_measuring(&self) -> bool {
        self.buf.is_none()
    }

    /// Bytes written (or counted) so far.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether nothing was written yet.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bytes still free in the buffer (`usize::MAX` when measuring).
    pub fn remaining(&self) -> usize {
        match &self.buf {
            Some(b) => b.len() - self.len,
            None => usize::MAX - self.len,
        }
    }

    /// The bytes written so far (empty when measuring).
    pub fn written(&self) -> &[u8] {
        match &self.buf {
            Some(b) => &b[..self.len],
            None => &[],
        }
    }

    /// Fails with `NoSpace` unless `n` more bytes fit.
    fn reserve(&self, n: usize) -> Result<(), MarshalError> {
        if n > self.remaining() {
            Err(MarshalError::NoSpace)
        } else {
            Ok(())
        }
    }

    /// Appends raw bytes (no length prefix).
    pub fn put_raw(&mut self, bytes: &[u8]) -> Result<(), MarshalError> {
        self.reserve(bytes.len())?;
        if let Some(b) = self.buf.as_deref_mut() {
            b[self.len..self.len + bytes.len()].copy_from_slice(bytes);
        }
        self.len += bytes.len();
        Ok(())
    }

    /// Appends a `u8`.
    pub fn put_u8(&mut self, v: u8) -> Result<(), MarshalError> {
        self.put_raw(&[v])
    }

    /// Appends a `u16`.
    pub fn put_u16(&mut self, v: u16) -> Result<(), MarshalError> {
        self.put_raw(&v.to_be_bytes())
    }

    /// Appends a `u32`.
    pub fn put_u32(&mut self, v: u32) -> Result<(), MarshalError> {
        self.put_raw(&v.to_be_bytes())
    }

    /// Appends a `u64`.
    pub fn put_u64(&mut self, v: u64) -> Result<(), MarshalError> {
        self.put_raw(&v.to_be_bytes())
    }

    /// Appends an `i32`.
    pub fn put_i32(&mut self, v: i32) -> Result<(), MarshalError> {
        self.put_raw(&v.to_be_bytes())
    }

    /// Appends an `i64`.
    pub fn put_i64(&mut self, v: i64) -> Result<(), MarshalError> {
        self.put_raw(&v.to_be_bytes())
    }

    /// Appends a `bool` (one byte, 0 or 1).
    pub fn put_bool(&mut self, v: bool) -> Result<(), MarshalError> {
        self.put_u8(u8::from(v))
    }

    /// Appends a byte string: `u32` length, then the bytes.  `TooLong` if the
    /// length does not fit a `u32`.
    pub fn put_bytes(&mut self, bytes: &[u8]) -> Result<(), MarshalError> {
        let n = u32::try_from(bytes.len()).map_err(|_| MarshalError::TooLong)?;
        self.reserve(bytes.len().saturating_add(4))?;
        self.put_u32(n)?;
        self.put_raw(bytes)
    }

    /// Appends a string, encoded as [`Encoder::put_bytes`].  `BadString` if
    /// it holds a NUL byte, `TooLong` if it is longer than [`MAX_STR`].
    pub fn put_str(&mut self, s: &[u8]) -> Result<(), MarshalError> {
        check_str(s)?;
        self.put_bytes(s)
    }

    /// Appends any [`Wire`] value.
    pub fn put<T: Wire>(&mut self, v: &T) -> Result<(), MarshalError> {
        self.reserve(T::SIZE)?;
        v.put(self)
    }

    /// Appends an optional [`Wire`] value: presence marker, then the value.
    pub fn put_opt<T: Wire>(&mut self, v: Option<&T>) -> Result<(), MarshalError> {
        match v {
            None => self.put_u8(0),
            Some(v) => {
                self.reserve(T::SIZE.saturating_add(1))?;
                self.put_u8(1)?;
                v.put(self)
            }
        }
    }

    /// Appends an optional byte string: presence marker, then the bytes.
    pub fn put_opt_bytes(&mut self, v: Option<&[u8]>) -> Result<(), MarshalError> {
        match v {
            None => self.put_u8(0),
            Some(b) => {
                u32::try_from(b.len()).map_err(|_| MarshalError::TooLong)?;
                self.reserve(b.len().saturating_add(5))?;
                self.put_u8(1)?;
                self.put_bytes(b)
            }
        }
    }

    /// Appends an optional string: presence marker, then the string.
    pub fn put_opt_str(&mut self, v: Option<&[u8]>) -> Result<(), MarshalError> {
        if let Some(s) = v {
            check_str(s)?;
        }
        self.put_opt_bytes(v)
    }
}

/// Reads values from a borrowed buffer.
///
/// A failed `get_*` leaves the decoder as it was.
#[derive(Clone, Debug)]
pub struct Decoder<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Decoder<'a> {
    /// A decoder reading `buf` from its start.
    pub fn new(buf: &'a [u8]) -> Self {
        Self { buf, pos: 0 }
    }

    /// Bytes read so far.
    pub fn position(&self) -> usize {
        self.pos
    }

    /// Bytes not read yet.
    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// `Trailing` unless every byte was read.
    pub fn finish(&self) -> Result<(), MarshalError> {
        if self.remaining() == 0 {
            Ok(())
        } else {
            Err(MarshalError::Trailing)
        }
    }

    /// Takes the next `n` bytes (no length prefix).
    pub fn get_raw(&mut self, n: usize) -> Result<&'a [u8], MarshalError> {
        if n > self.remaining() {
            return Err(MarshalError::Truncated);
        }
        let b = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(b)
    }

    /// Takes the next `N` bytes as an array.
    fn get_array<const N: usize>(&mut self) -> Result<[u8; N], MarshalError> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.get_raw(N)?);
        Ok(a)
    }

    /// Reads a `u8`.
    pub fn get_u8(&mut self) -> Result<u8, MarshalError> {
        Ok(self.get_array::<1>()?[0])
    }

    /// Reads a `u16`.
    pub fn get_u16(&mut self) -> Result<u16, MarshalError> {
        Ok(u16::from_be_bytes(self.get_array()?))
    }

    /// Reads a `u32`.
    pub fn get_u32(&mut self) -> Result<u32, MarshalError> {
        Ok(u32::from_be_bytes(self.get_array()?))
    }

    /// Reads a `u64`.
    pub fn get_u64(&mut self) -> Result<u64, MarshalError> {
        Ok(u64::from_be_bytes(self.get_array()?))
    }

    /// Reads an `i32`.
    pub fn get_i32(&mut self) -> Result<i32, MarshalError> {
        Ok(i32::from_be_bytes(self.get_array()?))
    }

    /// Reads an `i64`.
    pub fn get_i64(&mut self) -> Result<i64, MarshalError> {
        Ok(i64::from_be_bytes(self.get_array()?))
    }

    /// Reads a `bool`; `BadBool` unless the byte is 0 or 1.
    pub fn get_bool(&mut self) -> Result<bool, MarshalError> {
        match self.buf.get(self.pos) {
            None => Err(MarshalError::Truncated),
            Some(0) => {
                self.pos += 1;
                Ok(false)
            }
            Some(1) => {
                self.pos += 1;
                Ok(true)
            }
            Some(_) => Err(MarshalError::BadBool),
        }
    }

    /// Reads a byte string, borrowed from the input (zero copy).  `TooLong`
    /// if its length is above `max`, `Truncated` if the input is shorter
    /// than the length says.
    pub fn get_bytes(&mut self, max: usize) -> Result<&'a [u8], MarshalError> {
        let start = self.pos;
        let n = self.get_u32()?;
        let n = usize::try_from(n).unwrap_or(usize::MAX);
        let r = if n > max {
            Err(MarshalError::TooLong)
        } else {
            self.get_raw(n)
        };
        if r.is_err() {
            self.pos = start;
        }
        r
    }

    /// Reads a string (borrowed, without a NUL): `TooLong` above
    /// [`MAX_STR`] bytes, `BadString` if it holds a NUL byte.
    pub fn get_str(&mut self) -> Result<&'a [u8], MarshalError> {
        let start = self.pos;
        let s = self.get_bytes(MAX_STR)?;
        if let Err(e) = check_str(s) {
            self.pos = start;
            return Err(e);
        }
        Ok(s)
    }

    /// Reads any [`Wire`] value.
    pub fn get<T: Wire>(&mut self) -> Result<T, MarshalError> {
        let start = self.pos;
        let r = T::get(self);
        if r.is_err() {
            self.pos = start;
        }
        r
    }

    /// Reads a presence marker (`BadBool` unless 0 or 1).
    fn get_presence(&mut self) -> Result<bool, MarshalError> {
        self.get_bool()
    }

    /// Reads an optional [`Wire`] value.
    pub fn get_opt<T: Wire>(&mut self) -> Result<Option<T>, MarshalError> {
        let start = self.pos;
        if !self.get_presence()? {
            return Ok(None);
        }
        match T::get(self) {
            Ok(v) => Ok(Some(v)),
            Err(e) => {
                self.pos = start;
                Err(e)
            }
        }
    }

    /// Reads an optional byte string (see [`Decoder::get_bytes`]).
    pub fn get_opt_bytes(&mut self, max: usize) -> Result<Option<&'a [u8]>, MarshalError> {
        let start = self.pos;
        if !self.get_presence()? {
            return Ok(None);
        }
        self.get_bytes(max)
            .map(Some)
            .inspect_err(|_| self.pos = start)
    }

    /// Reads an optional string (see [`Decoder::get_str`]).
    pub fn get_opt_str(&mut self) -> Result<Option<&'a [u8]>, MarshalError> {
        let start = self.pos;
        if !self.get_presence()? {
            return Ok(None);
        }
        self.get_str().map(Some).inspect_err(|_| self.pos = start)
    }
}

/// A fixed-size value with a wire encoding.
pub trait Wire: Sized {
    /// Bytes of the encoding.
    const SIZE: usize;

    /// Appends the value.
    fn put(&self, e: &mut Encoder<'_>) -> Result<(), MarshalError>;

    /// Reads a value.
    fn get(d: &mut Decoder<'_>) -> Result<Self, MarshalError>;
}

/// Implements [`Wire`] for a primitive through the matching `put_*`/`get_*`.
macro_rules! wire_primitive {
    ($($t:ty, $size:expr, $put:ident, $get:ident;)*) => {
        $(
            impl Wire for $t {
                const SIZE: usize = $size;

                fn put(&self, e: &mut Encoder<'_>) -> Result<(), MarshalError> {
                    e.$put(*self)
                }

                fn get(d: &mut Decoder<'_>) -> Result<Self, MarshalError> {
                    d.$get()
                }
            }
        )*
    };
}

wire_primitive! {
    u8, 1, put_u8, get_u8;
    u16, 2, put_u16, get_u16;
    u32, 4, put_u32, get_u32;
    u64, 8, put_u64, get_u64;
    i32, 4, put_i32, get_i32;
    i64, 8, put_i64, get_i64;
    bool, 1, put_bool, get_bool;
}

/// Declares a plain struct of [`Wire`] fields and implements [`Wire`] for
/// it (fields in declaration order, `SIZE` = the sum of the fields' sizes).
/// See the [module documentation](self) for the syntax.
macro_rules! wire_struct {
    (
        zoid = $z0:ident $(:: $zn:ident)* ;
        $(#[$meta:meta])*
        $vis:vis struct $name:ident {
            $(
                $(#[$fmeta:meta])*
                $fvis:vis $field:ident : $ty:ty
            ),* $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
        $vis struct $name {
            $(
                $(#[$fmeta])*
                $fvis $field: $ty,
            )*
        }

        const _: () = {
            use $z0 $(:: $zn)* ::marshal as __m;

            impl __m::Wire for $name {
                const SIZE: usize = 0 $(+ <$ty as __m::Wire>::SIZE)*;

                fn put(
                    &self,
                    e: &mut __m::Encoder<'_>,
                ) -> ::core::result::Result<(), __m::MarshalError> {
                    $( __m::Wire::put(&self.$field, e)?; )*
                    ::core::result::Result::Ok(())
                }

                fn get(
                    d: &mut __m::Decoder<'_>,
                ) -> ::core::result::Result<Self, __m::MarshalError> {
                    ::core::result::Result::Ok(Self {
                        $( $field: <$ty as __m::Wire>::get(d)?, )*
                    })
                }
            }
        };
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    wire_struct! {
        zoid = super::super;
        /// A test struct.
        pub struct Pair {
            /// First.
            pub a: u16,
            /// Second.
            pub b: i64,
        }
    }

    wire_struct! {
        zoid = super::super;
        /// Nested and empty-ish.
        struct Outer {
            p: Pair,
            flag: bool,
        }
    }

    #[test]
    fn wire_struct_round_trips() {
        assert_eq!(Pair::SIZE, 10);
        assert_eq!(Outer::SIZE, 11);
        let v = Outer {
            p: Pair { a: 0x1234, b: -2 },
            flag: true,
        };
        let mut buf = [0u8; 11];
        let mut e = Encoder::new(&mut buf);
        e.put(&v).unwrap();
        assert_eq!(e.len(), 11);
        assert_eq!(
            buf,
            [0x12, 0x34, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe, 1]
        );
        let mut d = Decoder::new(&buf);
        assert_eq!(d.get::<Outer>().unwrap(), v);
        d.finish().unwrap();
    }

    #[test]
    fn failed_puts_and_gets_change_nothing() {
        let mut buf = [0u8; 6];
        let mut e = Encoder::new(&mut buf);
        e.put_u16(7).unwrap();
        assert_eq!(e.put_bytes(b"abc"), Err(MarshalError::NoSpace));
        assert_eq!(e.put(&Pair::default()), Err(MarshalError::NoSpace));
        assert_eq!(e.len(), 2);
        let mut d = Decoder::new(&[0, 0, 0, 9, 1]);
        assert_eq!(d.get_bytes(100), Err(MarshalError::Truncated));
        assert_eq!(d.get_bytes(3), Err(MarshalError::TooLong));
        assert_eq!(d.position(), 0);
        assert_eq!(d.get::<Pair>(), Err(MarshalError::Truncated));
        assert_eq!(d.position(), 0);
    }
}
