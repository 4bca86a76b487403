package store

import (
	"context"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// lenientText is PostgreSQL's text codec that also takes Go integers and
// floats, written as SQLite writes a number into a TEXT column (5 -> "5"),
// so an area statement that binds a number to a text column or compares
// one with it behaves the same on both engines.
type lenientText struct{ pgtype.TextCodec }

func (c lenientText) PlanEncode(m *pgtype.Map, oid uint32, format int16, value any) pgtype.EncodePlan {
	if p := c.TextCodec.PlanEncode(m, oid, format, value); p != nil {
		return p
	}
	switch value.(type) {
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, float32, float64:
		return numberAsText{}
	}
	return nil
}

type numberAsText struct{}

func (numberAsText) Encode(value any, buf []byte) ([]byte, error) {
	switch v := value.(type) {
	case int:
		return strconv.AppendInt(buf, int64(v), 10), nil
	case int8:
		return strconv.AppendInt(buf, int64(v), 10), nil
	case int16:
		return strconv.AppendInt(buf, int64(v), 10), nil
	case int32:
		return strconv.AppendInt(buf, int64(v), 10), nil
	case int64:
		return strconv.AppendInt(buf, v, 10), nil
	case uint:
		return strconv.AppendUint(buf, uint64(v), 10), nil
	case uint8:
		return strconv.AppendUint(buf, uint64(v), 10), nil
	case uint16:
		return strconv.AppendUint(buf, uint64(v), 10), nil
	case uint32:
		return strconv.AppendUint(buf, uint64(v), 10), nil
	case uint64:
		return strconv.AppendUint(buf, v, 10), nil
	case float32:
		return strconv.AppendFloat(buf, float64(v), 'g', -1, 32), nil
	case float64:
		return strconv.AppendFloat(buf, v, 'g', -1, 64), nil
	}
	return nil, nil
}

// afterConnect prepares each new PostgreSQL connection.
func afterConnect(_ context.Context, c *pgx.Conn) error {
	c.TypeMap().RegisterType(&pgtype.Type{Name: "text", OID: pgtype.TextOID, Codec: lenientText{}})
	return nil
}
