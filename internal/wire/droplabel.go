package wire

import (
	"bytes"
	"fmt"
)

// DropLabel removes the label called name from the series' Key, in either
// key form (1.0's Label fields, 2.0's ids and values), and reports whether
// the series had it. The new Key lives in a buffer of the series (reused
// by its next series); the rest of the series is unchanged. A key that
// does not parse is left as it is, with the error.
func (s *Series) DropLabel(name []byte) (bool, error) {
	key := s.Key
	if len(key) > 0 && key[0] == keyFormV2 {
		return s.dropLabelV2(name)
	}
	// 1.0: the Label fields, each tag 0x0A, uvarint length, message.
	at := 0
	for at < len(key) {
		// Fast path for what Prometheus sends: 0x0A len 0x0A nlen name
		// 0x12 ..., lengths of one byte.
		if at+4 <= len(key) && key[at] == 0x0A && key[at+1] < 0x80 && key[at+2] == 0x0A && key[at+3] < 0x80 {
			end, nend := at+2+int(key[at+1]), at+4+int(key[at+3])
			if end <= len(key) && nend <= end {
				if bytes.Equal(key[at+4:nend], name) {
					s.dropBuf = append(append(s.dropBuf[:0], key[:at]...), key[end:]...)
					s.Key = s.dropBuf
					return true, nil
				}
				at = end
				continue
			}
		}
		_, _, n := readTag(key[at:])
		msg, rest, err := readBytes(key[at+max(n, 0):])
		if n <= 0 || err != nil {
			return false, fmt.Errorf("%w: label field", ErrMalformed)
		}
		end := len(key) - len(rest)
		l, err := parseLabel(msg)
		if err != nil {
			return false, err
		}
		if bytes.Equal(l.Name, name) {
			s.dropBuf = append(append(s.dropBuf[:0], key[:at]...), key[end:]...)
			s.Key = s.dropBuf
			return true, nil
		}
		at = end
	}
	return false, nil
}

// dropLabelV2 is DropLabel for a 2.0 key.
func (s *Series) dropLabelV2(name []byte) (bool, error) {
	key := s.Key
	bytesField := func(at int) (int, []byte, error) {
		n, m := readVarint(key[at:])
		if m <= 0 || n > uint64(len(key)-at-m) {
			return 0, nil, fmt.Errorf("%w: 2.0 series key", ErrMalformed)
		}
		return at + m + int(n), key[at+m : at+m+int(n)], nil
	}
	// The id name's entries carry (0: they carry it in full): a name
	// with an id is always written by its id.
	if s.dropNames != s.names || !bytes.Equal(s.dropName, name) {
		s.dropNames, s.dropName, s.dropID = s.names, append(s.dropName[:0], name...), 0
		if s.names != nil {
			s.dropID = s.names.id(name)
		}
	}
	at := 1
	for at < len(key) {
		start := at
		id, m := readVarint(key[at:])
		if m <= 0 {
			return false, fmt.Errorf("%w: 2.0 series key", ErrMalformed)
		}
		at += m
		var lname []byte
		var err error
		if id == 0 {
			if at, lname, err = bytesField(at); err != nil {
				return false, err
			}
		} else if s.names == nil {
			return false, fmt.Errorf("%w: 2.0 series key without its label names", ErrMalformed)
		}
		if at, _, err = bytesField(at); err != nil {
			return false, err
		}
		if (id == 0 && bytes.Equal(lname, name)) || (id != 0 && uint64(s.dropID) == id) {
			s.dropBuf = append(append(s.dropBuf[:0], key[:start]...), key[at:]...)
			s.Key = s.dropBuf
			return true, nil
		}
	}
	return false, nil
}
