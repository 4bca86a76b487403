package wasm

import (
	"context"
	"encoding/binary"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
)

// The environment. wazero's ModuleConfig.WithEnv copies the whole
// configuration, with every variable set so far, for each variable, so a
// call's twenty-odd CGI variables cost a few hundred map copies. The host
// instead serves a call's environment itself: WASI's environ_sizes_get and
// environ_get read it from the call's context, and the instance sees it as
// it would see wazero's (the same "KEY=value" entries, in the same order).

// errnoFault is WASI's errno "fault": a result does not fit in memory.
const errnoFault = 21

type envKey struct{}

// callEnv is one call's environment: "KEY=value" entries and the bytes
// they take with their NUL terminators.
type callEnv struct {
	vars [][]byte
	size uint32
}

// newCallEnv is the environment of keys (in order) with values from env.
func newCallEnv(keys []string, env map[string]string) *callEnv {
	n := 0
	for _, k := range keys {
		n += len(k) + 1 + len(env[k])
	}
	buf := make([]byte, 0, n)
	e := &callEnv{vars: make([][]byte, len(keys))}
	for i, k := range keys {
		start := len(buf)
		buf = append(buf, k...)
		buf = append(buf, '=')
		buf = append(buf, env[k]...)
		e.vars[i] = buf[start:len(buf):len(buf)]
		e.size += uint32(len(buf)-start) + 1
	}
	return e
}

func withCallEnv(ctx context.Context, e *callEnv) context.Context {
	return context.WithValue(ctx, envKey{}, e)
}

func envOf(ctx context.Context) *callEnv {
	if e, ok := ctx.Value(envKey{}).(*callEnv); ok {
		return e
	}
	return &callEnv{}
}

// instantiateWASI instantiates WASI preview 1 in rt with environ_get and
// environ_sizes_get serving the call's environment.
func instantiateWASI(ctx context.Context, rt wazero.Runtime) error {
	b := rt.NewHostModuleBuilder(wasi_snapshot_preview1.ModuleName)
	wasi_snapshot_preview1.NewFunctionExporter().ExportFunctions(b)
	i32 := api.ValueTypeI32
	b.NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(environSizesGet), []api.ValueType{i32, i32}, []api.ValueType{i32}).
		WithParameterNames("result.environc", "result.environv_len").
		Export("environ_sizes_get")
	b.NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(environGet), []api.ValueType{i32, i32}, []api.ValueType{i32}).
		WithParameterNames("environ", "environ_buf").
		Export("environ_get")
	_, err := b.Instantiate(ctx)
	return err
}

// environSizesGet writes the number of variables and the bytes they take.
func environSizesGet(ctx context.Context, mod api.Module, stack []uint64) {
	e := envOf(ctx)
	mem := mod.Memory()
	if !mem.WriteUint32Le(uint32(stack[0]), uint32(len(e.vars))) || !mem.WriteUint32Le(uint32(stack[1]), e.size) {
		stack[0] = errnoFault
		return
	}
	stack[0] = 0
}

// environGet writes the variables, NUL-terminated, from environ_buf on,
// and their addresses from environ on.
func environGet(ctx context.Context, mod api.Module, stack []uint64) {
	e := envOf(ctx)
	mem := mod.Memory()
	offsets, at := uint32(stack[0]), uint32(stack[1])
	ptrs, ok1 := mem.Read(offsets, uint32(len(e.vars))*4)
	data, ok2 := mem.Read(at, e.size)
	if !ok1 || !ok2 {
		stack[0] = errnoFault
		return
	}
	n := uint32(0)
	for i, v := range e.vars {
		binary.LittleEndian.PutUint32(ptrs[4*i:], at+n)
		n += uint32(copy(data[n:], v))
		data[n] = 0
		n++
	}
	stack[0] = 0
}
