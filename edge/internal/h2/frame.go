package h2

import (
	"encoding/binary"
	"fmt"
)

// Frame types (RFC 9113 §6).
const (
	frameData         = 0x0
	frameHeaders      = 0x1
	framePriority     = 0x2
	frameRSTStream    = 0x3
	frameSettings     = 0x4
	framePushPromise  = 0x5
	framePing         = 0x6
	frameGoAway       = 0x7
	frameWindowUpdate = 0x8
	frameContinuation = 0x9
)

// Frame flags.
const (
	flagEndStream  = 0x1
	flagAck        = 0x1
	flagEndHeaders = 0x4
	flagPadded     = 0x8
	flagPriority   = 0x20
)

// Settings parameters (RFC 9113 §6.5.2).
const (
	settingHeaderTableSize      = 0x1
	settingEnablePush           = 0x2
	settingMaxConcurrentStreams = 0x3
	settingInitialWindowSize    = 0x4
	settingMaxFrameSize         = 0x5
	settingMaxHeaderListSize    = 0x6
)

// Protocol constants.
const (
	frameHeaderLen     = 9
	defaultMaxFrame    = 1 << 14 // SETTINGS_MAX_FRAME_SIZE's initial value
	maxFrameSizeLimit  = 1<<24 - 1
	defaultWindow      = 65535
	maxWindow          = 1<<31 - 1
	defaultTableSize   = 4096 // SETTINGS_HEADER_TABLE_SIZE's initial value
	clientPreface      = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
	maxStreamID        = 1<<31 - 1
	settingsEntryBytes = 6
)

// ErrCode is an HTTP/2 error code (RFC 9113 §7).
type ErrCode uint32

// Error codes.
const (
	ErrCodeNo                 ErrCode = 0x0
	ErrCodeProtocol           ErrCode = 0x1
	ErrCodeInternal           ErrCode = 0x2
	ErrCodeFlowControl        ErrCode = 0x3
	ErrCodeSettingsTimeout    ErrCode = 0x4
	ErrCodeStreamClosed       ErrCode = 0x5
	ErrCodeFrameSize          ErrCode = 0x6
	ErrCodeRefusedStream      ErrCode = 0x7
	ErrCodeCancel             ErrCode = 0x8
	ErrCodeCompression        ErrCode = 0x9
	ErrCodeConnect            ErrCode = 0xa
	ErrCodeEnhanceYourCalm    ErrCode = 0xb
	ErrCodeInadequateSecurity ErrCode = 0xc
	ErrCodeHTTP11Required     ErrCode = 0xd
)

var errCodeNames = [...]string{"NO_ERROR", "PROTOCOL_ERROR", "INTERNAL_ERROR", "FLOW_CONTROL_ERROR",
	"SETTINGS_TIMEOUT", "STREAM_CLOSED", "FRAME_SIZE_ERROR", "REFUSED_STREAM", "CANCEL",
	"COMPRESSION_ERROR", "CONNECT_ERROR", "ENHANCE_YOUR_CALM", "INADEQUATE_SECURITY", "HTTP_1_1_REQUIRED"}

func (c ErrCode) String() string {
	if int(c) < len(errCodeNames) {
		return errCodeNames[c]
	}
	return fmt.Sprintf("unknown error code 0x%x", uint32(c))
}

// ConnError is a connection error (RFC 9113 §5.4.1): the connection is
// ended with GOAWAY carrying Code.
type ConnError struct {
	Code   ErrCode
	Reason string
}

func (e ConnError) Error() string { return "h2: connection error " + e.Code.String() + ": " + e.Reason }

// streamError is a stream error (RFC 9113 §5.4.2): the stream is ended
// with RST_STREAM carrying code; the connection goes on.
type streamError struct {
	id   uint32
	code ErrCode
}

func (e streamError) Error() string {
	return fmt.Sprintf("h2: stream %d error %s", e.id, e.code)
}

// frameHeader is the fixed 9-octet header of a frame.
type frameHeader struct {
	length   uint32
	typ      uint8
	flags    uint8
	streamID uint32
}

func parseFrameHeader(b []byte) frameHeader {
	return frameHeader{
		length:   uint32(b[0])<<16 | uint32(b[1])<<8 | uint32(b[2]),
		typ:      b[3],
		flags:    b[4],
		streamID: binary.BigEndian.Uint32(b[5:9]) & maxStreamID,
	}
}

func (h frameHeader) has(f uint8) bool { return h.flags&f != 0 }

// appendFrameHeader appends a frame header to dst.
func appendFrameHeader(dst []byte, length int, typ, flags uint8, streamID uint32) []byte {
	return append(dst, byte(length>>16), byte(length>>8), byte(length), typ, flags,
		byte(streamID>>24), byte(streamID>>16), byte(streamID>>8), byte(streamID))
}

func appendUint32(dst []byte, v uint32) []byte {
	return append(dst, byte(v>>24), byte(v>>16), byte(v>>8), byte(v))
}

func appendRSTStream(dst []byte, id uint32, code ErrCode) []byte {
	dst = appendFrameHeader(dst, 4, frameRSTStream, 0, id)
	return appendUint32(dst, uint32(code))
}

func appendWindowUpdate(dst []byte, id uint32, incr uint32) []byte {
	dst = appendFrameHeader(dst, 4, frameWindowUpdate, 0, id)
	return appendUint32(dst, incr)
}

func appendGoAway(dst []byte, lastID uint32, code ErrCode) []byte {
	dst = appendFrameHeader(dst, 8, frameGoAway, 0, 0)
	dst = appendUint32(dst, lastID)
	return appendUint32(dst, uint32(code))
}

func appendSetting(dst []byte, id uint16, v uint32) []byte {
	return appendUint32(append(dst, byte(id>>8), byte(id)), v)
}
