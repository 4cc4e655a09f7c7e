#!/usr/bin/env python3
"""mnemo from Python through its C API (libmnemo_c) with the standard library's ctypes.

    python3 mnemo_ctypes.py --lib build/release/libmnemo_c.so MODEL.gguf -p "Once upon" -n 16
    python3 mnemo_ctypes.py --lib ... MODEL.gguf --replay SCENARIO.json REF.bin TOL

The first form generates text (greedy, or sampled with --temp). The second decodes a
scenario of the fixtures' JSON format (calls of tokens, positions, sequence ids and an
optional sequence operation before each) and compares every logit with a .bin of f32
rows (e.g. what mnemo-replay wrote through the C++ templates); it exits 1 beyond TOL.
"""
import argparse
import ctypes as C
import json
import struct
import sys

MNEMO_OK = 0
MNEMO_NO_SPACE = 3


class MnemoOptions(C.Structure):
    _fields_ = [
        ("memory", C.c_char_p),
        ("kv", C.c_char_p),
        ("evict_policy", C.c_char_p),
        ("evict_budget", C.c_size_t),
        ("n_ctx", C.c_uint32),
        ("n_seq_max", C.c_int32),
        ("n_ubatch", C.c_uint32),
        ("n_batch", C.c_uint32),
        ("n_threads", C.c_int32),
        ("n_threads_batch", C.c_int32),
        ("recompute", C.c_int32),
        ("use_mmap", C.c_int32),
        ("abort_callback", C.c_void_p),
        ("abort_user", C.c_void_p),
        ("progress_callback", C.c_void_p),
        ("progress_user", C.c_void_p),
        ("log_callback", C.c_void_p),
        ("log_user", C.c_void_p),
    ]


class MnemoError(RuntimeError):
    pass


def load_library(path):
    lib = C.CDLL(path)
    P = C.c_void_p
    sig = {
        "mnemo_last_error": (C.c_char_p, []),
        "mnemo_default_options": (MnemoOptions, []),
        "mnemo_open": (C.c_int, [C.c_char_p, C.POINTER(MnemoOptions), C.POINTER(P)]),
        "mnemo_close": (None, [P]),
        "mnemo_architecture": (C.c_char_p, [P]),
        "mnemo_memory_kind": (C.c_char_p, [P]),
        "mnemo_n_vocab": (C.c_uint32, [P]),
        "mnemo_tokenize": (C.c_int, [P, C.c_char_p, C.c_size_t, C.c_int, C.c_int,
                                     C.POINTER(C.c_int32), C.c_size_t, C.POINTER(C.c_size_t)]),
        "mnemo_detokenize": (C.c_int, [P, C.POINTER(C.c_int32), C.c_size_t, C.c_int, C.c_int,
                                       C.c_char_p, C.c_size_t, C.POINTER(C.c_size_t)]),
        "mnemo_eos": (C.c_int32, [P]),
        "mnemo_decode": (C.c_int, [P, C.POINTER(C.c_int32), C.POINTER(C.c_int32),
                                   C.POINTER(C.c_int32), C.POINTER(C.c_int8), C.c_size_t]),
        "mnemo_n_outputs": (C.c_uint32, [P]),
        "mnemo_logits_ith": (C.POINTER(C.c_float), [P, C.c_int32]),
        "mnemo_sampler_new": (C.c_int, [C.c_float, C.c_uint32, C.c_float, C.c_uint64,
                                        C.POINTER(P)]),
        "mnemo_sampler_free": (None, [P]),
        "mnemo_sample": (C.c_int32, [P, P, C.c_int32]),
        "mnemo_seq_rm": (C.c_int, [P, C.c_int32, C.c_int32, C.c_int32]),
        "mnemo_seq_cp": (C.c_int, [P, C.c_int32, C.c_int32, C.c_int32, C.c_int32]),
        "mnemo_seq_keep": (C.c_int, [P, C.c_int32]),
        "mnemo_seq_add": (C.c_int, [P, C.c_int32, C.c_int32, C.c_int32, C.c_int32]),
        "mnemo_set_weight_tiles": (None, [C.c_int]),
        "mnemo_set_bf16_products": (None, [C.c_int]),
    }
    for name, (res, args) in sig.items():
        fn = getattr(lib, name)
        fn.restype = res
        fn.argtypes = args
    return lib


class Engine:
    """An open model: tokenize, decode, logits, sample, sequence operations."""

    def __init__(self, lib, path, **options):
        self.lib = lib
        o = lib.mnemo_default_options()
        for key, value in options.items():
            setattr(o, key, value.encode() if isinstance(value, str) else value)
        handle = C.c_void_p()
        self._check(lib.mnemo_open(path.encode(), C.byref(o), C.byref(handle)))
        self.h = handle
        self.n_vocab = lib.mnemo_n_vocab(self.h)

    def _check(self, code):
        if code != MNEMO_OK:
            raise MnemoError(self.lib.mnemo_last_error().decode())

    def close(self):
        if self.h:
            self.lib.mnemo_close(self.h)
            self.h = None

    def tokenize(self, text, add_special=True):
        raw = text.encode()
        n = C.c_size_t(0)
        cap = len(raw) + 8
        out = (C.c_int32 * cap)()
        code = self.lib.mnemo_tokenize(self.h, raw, len(raw), int(add_special), 0, out, cap,
                                       C.byref(n))
        if code == MNEMO_NO_SPACE:
            out = (C.c_int32 * n.value)()
            code = self.lib.mnemo_tokenize(self.h, raw, len(raw), int(add_special), 0, out,
                                           n.value, C.byref(n))
        self._check(code)
        return list(out[: n.value])

    def detokenize(self, ids, text_start=True):
        arr = (C.c_int32 * len(ids))(*ids)
        n = C.c_size_t(0)
        buf = C.create_string_buffer(256)
        code = self.lib.mnemo_detokenize(self.h, arr, len(ids), 0, int(text_start), buf, 256,
                                         C.byref(n))
        if code == MNEMO_NO_SPACE:
            buf = C.create_string_buffer(n.value + 1)
            code = self.lib.mnemo_detokenize(self.h, arr, len(ids), 0, int(text_start), buf,
                                             n.value + 1, C.byref(n))
        self._check(code)
        return buf.raw[: n.value].decode(errors="replace")

    def decode(self, tokens, positions, seqs, outputs=None):
        n = len(tokens)
        out = None if outputs is None else (C.c_int8 * n)(*[1 if x else 0 for x in outputs])
        self._check(self.lib.mnemo_decode(self.h, (C.c_int32 * n)(*tokens),
                                          (C.c_int32 * n)(*positions), (C.c_int32 * n)(*seqs),
                                          out, n))

    def logits(self, i=-1):
        row = self.lib.mnemo_logits_ith(self.h, i)
        if not row:
            raise MnemoError("no logits for output %d" % i)
        return row[: self.n_vocab]

    def sample(self, sampler=None, i=-1):
        return self.lib.mnemo_sample(self.h, sampler, i)


def generate(lib, args):
    e = Engine(lib, args.model, n_threads=args.threads, n_ctx=args.ctx,
               evict_policy=args.policy, evict_budget=args.evict_budget)
    try:
        ids = e.tokenize(args.prompt)
        e.decode(ids, list(range(len(ids))), [0] * len(ids))
        sampler = None
        if args.temp > 0:
            s = C.c_void_p()
            e._check(lib.mnemo_sampler_new(args.temp, 40, 0.95, args.seed, C.byref(s)))
            sampler = s
        generated = []
        eos = lib.mnemo_eos(e.h)
        for step in range(args.n):
            t = e.sample(sampler)
            if t < 0 or t == eos:
                break
            generated.append(t)
            e.decode([t], [len(ids) + step], [0])
        if sampler is not None:
            lib.mnemo_sampler_free(sampler)
        print(args.prompt + e.detokenize(generated, text_start=False))
        print("%s, memory %s: %d prompt tokens, %d generated" %
              (lib.mnemo_architecture(e.h).decode(), lib.mnemo_memory_kind(e.h).decode(),
               len(ids), len(generated)), file=sys.stderr)
        return 0
    finally:
        e.close()


def sequence_op(e, op):
    """The scenario's "before" operation, e.g. "seq_rm 0 5 -1" or "seq_cp 0 1 -1 -1"."""
    if not op:
        return
    name, *nums = op.split()
    fn = {"seq_rm": e.lib.mnemo_seq_rm, "seq_cp": e.lib.mnemo_seq_cp,
          "seq_keep": e.lib.mnemo_seq_keep, "seq_add": e.lib.mnemo_seq_add}.get(name)
    if fn is None:
        raise MnemoError("unknown sequence operation '%s'" % op)
    e._check(fn(e.h, *[int(x) for x in nums]))


def replay(lib, args):
    scenario_path, ref_path, tol = args.replay
    with open(scenario_path) as f:
        sc = json.load(f)
    with open(ref_path, "rb") as f:
        raw = f.read()
    ref = struct.unpack("<%df" % (len(raw) // 4), raw)
    options = dict(n_threads=args.threads, n_ctx=args.ctx, n_seq_max=4, kv=args.kv)
    if args.memory:
        options["memory"] = args.memory
    e = Engine(lib, args.model, **options)
    try:
        rows = []
        for call in sc["calls"]:
            sequence_op(e, call.get("before", ""))
            n = len(call["tokens"])
            e.decode(call["tokens"], call["pos"], call["seq"], [True] * n)
            rows.extend(e.logits(i) for i in range(n))
    finally:
        e.close()
    ours = [x for row in rows for x in row]
    if len(ours) != len(ref):
        print("replay: %d logits, the reference %d" % (len(ours), len(ref)))
        return 1
    worst, at = 0.0, 0
    for i, (a, b) in enumerate(zip(ours, ref)):
        d = abs(a - b)
        if not d <= worst:
            worst, at = (d if d == d else float("inf")), i
    ok = worst <= float(tol)
    print("replay %s: %d rows, max |diff| %.3g at row %d (tolerance %s): %s" %
          (scenario_path, len(rows), worst, at // e.n_vocab, tol, "ok" if ok else "FAILED"))
    return 0 if ok else 1


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("model")
    p.add_argument("--lib", required=True, help="path of libmnemo_c.so")
    p.add_argument("-p", "--prompt", default="Once upon a time")
    p.add_argument("-n", type=int, default=16)
    p.add_argument("--temp", type=float, default=0.0)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--ctx", type=int, default=4096)
    p.add_argument("--kv", default="f32")
    p.add_argument("--memory", default=None)
    p.add_argument("--policy", default="none",
                   help="eviction policy: none, h2o, tova, snapkv, streaming_llm, quest")
    p.add_argument("--evict-budget", type=int, default=0,
                   help="cells per (sequence, layer); quest: cells a decode row reads")
    p.add_argument("--replay", nargs=3, metavar=("SCENARIO", "REF", "TOL"))
    p.add_argument("--no-weight-tiles", action="store_true",
                   help="load q4_0 / k-quant weights without their tiles (less memory)")
    p.add_argument("--bf16-products", action="store_true",
                   help="decode attention in bf16 products where the CPU has AVX512_BF16")
    args = p.parse_args()
    lib = load_library(args.lib)
    if args.no_weight_tiles:
        lib.mnemo_set_weight_tiles(0)
    if args.bf16_products:
        lib.mnemo_set_bf16_products(1)
    try:
        return replay(lib, args) if args.replay else generate(lib, args)
    except MnemoError as err:
        print("mnemo:", err, file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
