//! The protobuf wire format, read field by field (no code generation, no reflection).

use super::DecodeError;

/// The value of one field occurrence on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum WireValue<'a> {
    /// Wire type 0.
    Varint(u64),
    /// Wire type 1 (little-endian 8 bytes).
    Fixed64(u64),
    /// Wire type 2: strings, bytes, embedded messages, packed repeated scalars.
    Bytes(&'a [u8]),
    /// Wire type 5 (little-endian 4 bytes).
    Fixed32(u32),
}

/// Iterates over the `(field number, value)` pairs of one message.
pub(super) struct FieldReader<'a> {
    buf: &'a [u8],
}

impl<'a> FieldReader<'a> {
    /// A reader over the encoded message `buf`.
    pub(super) fn new(buf: &'a [u8]) -> Self {
        FieldReader { buf }
    }

    /// The next field, `None` at the end of the message.
    pub(super) fn next_field(&mut self) -> Result<Option<(u32, WireValue<'a>)>, DecodeError> {
        if self.buf.is_empty() {
            return Ok(None);
        }
        let key = self.varint()?;
        let number = u32::try_from(key >> 3).map_err(|_| DecodeError::InvalidKey(key))?;
        if number == 0 {
            return Err(DecodeError::InvalidKey(key));
        }
        let value = match key & 7 {
            0 => WireValue::Varint(self.varint()?),
            1 => WireValue::Fixed64(u64::from_le_bytes(self.fixed::<8>()?)),
            2 => {
                let len = self.varint()?;
                let len = usize::try_from(len).map_err(|_| DecodeError::Truncated)?;
                if len > self.buf.len() {
                    return Err(DecodeError::Truncated);
                }
                let (bytes, rest) = self.buf.split_at(len);
                self.buf = rest;
                WireValue::Bytes(bytes)
            }
            5 => WireValue::Fixed32(u32::from_le_bytes(self.fixed::<4>()?)),
            // Groups (3, 4) are never produced by Kubernetes' generated code.
            other => return Err(DecodeError::UnsupportedWireType(other as u8)),
        };
        Ok(Some((number, value)))
    }

    fn fixed<const N: usize>(&mut self) -> Result<[u8; N], DecodeError> {
        if self.buf.len() < N {
            return Err(DecodeError::Truncated);
        }
        let (head, rest) = self.buf.split_at(N);
        self.buf = rest;
        let mut out = [0u8; N];
        out.copy_from_slice(head);
        Ok(out)
    }

    fn varint(&mut self) -> Result<u64, DecodeError> {
        read_varint(&mut self.buf)
    }
}

/// Reads one base-128 varint from the front of `buf`, advancing it.
pub(super) fn read_varint(buf: &mut &[u8]) -> Result<u64, DecodeError> {
    let mut value: u64 = 0;
    for (i, byte) in buf.iter().enumerate() {
        if i == 10 {
            return Err(DecodeError::VarintOverflow);
        }
        value |= u64::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            *buf = &buf[i + 1..];
            return Ok(value);
        }
    }
    Err(DecodeError::Truncated)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_varint_and_length_delimited_fields() {
        // field 1 varint 150, field 2 bytes "hi"
        let buf = [0x08, 0x96, 0x01, 0x12, 0x02, b'h', b'i'];
        let mut r = FieldReader::new(&buf);
        assert_eq!(r.next_field().unwrap(), Some((1, WireValue::Varint(150))));
        assert_eq!(r.next_field().unwrap(), Some((2, WireValue::Bytes(b"hi"))));
        assert_eq!(r.next_field().unwrap(), None);
    }

    #[test]
    fn rejects_truncated_input() {
        let mut r = FieldReader::new(&[0x12, 0x05, b'a']);
        assert_eq!(r.next_field(), Err(DecodeError::Truncated));
        let mut r = FieldReader::new(&[0x08, 0x96]);
        assert_eq!(r.next_field(), Err(DecodeError::Truncated));
    }

    #[test]
    fn rejects_field_number_zero_and_groups() {
        assert_eq!(
            FieldReader::new(&[0x00, 0x01]).next_field(),
            Err(DecodeError::InvalidKey(0))
        );
        assert_eq!(
            FieldReader::new(&[0x0b]).next_field(),
            Err(DecodeError::UnsupportedWireType(3))
        );
    }

    #[test]
    fn rejects_overlong_varint() {
        let mut buf: &[u8] = &[0xff; 11];
        assert_eq!(read_varint(&mut buf), Err(DecodeError::VarintOverflow));
    }
}
