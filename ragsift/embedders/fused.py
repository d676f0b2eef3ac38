"""Rebuild the pinned int8 MiniLM export as a graph of onnxruntime's fused transformer kernels.

Why: the shipped export comes from torch's scaled-dot-product-attention path; onnxruntime's
optimizers cannot fuse that pattern (per layer it keeps ~20 small nodes: K reshapes, a
Softmax → IsNaN → Where guard, an unfused erf-GELU). The same weights wired as
``EmbedLayerNormalization`` → 6 × (``Attention`` → MatMul → ``SkipLayerNormalization`` →
MatMul → ``BiasGelu`` → MatMul → ``SkipLayerNormalization``) (com.microsoft CPU kernels)
compute the same function with fewer passes over memory (see bench/RESULTS.md).

How: read the initializers and nodes straight from the ONNX protobuf (a few wire-format
helpers; the ``onnx`` package is not a dependency), find each layer's weights by the bias
names their MatMul+Add carry, and write a new ModelProto in memory. Weights stay int8 with
their per-column scales behind Cast → Mul, which onnxruntime constant-folds at load exactly as
it does for the original file, so the arithmetic is the original's (fp32 compute).

Scope: only the pinned file (``DEFAULT_SHA256``); any other model runs its own graph as is.
The result is checked in tests against the fp32 reference and the plain graph.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass, field
from typing import Any

# ONNX TensorProto data types used here
FLOAT, INT8, INT32, INT64 = 1, 3, 6, 7
_NP_DTYPE = {FLOAT: "<f4", INT8: "i1", INT32: "<i4", INT64: "<i8"}


# -- protobuf wire format ---------------------------------------------------------------------
def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7


def _fields(buf: bytes | memoryview):
    """Yield (field number, wire type, value) of a message; value is int or a memoryview."""
    buf = memoryview(buf)
    pos, end = 0, len(buf)
    while pos < end:
        key, pos = _varint(buf, pos)
        num, wire = key >> 3, key & 7
        if wire == 0:
            val, pos = _varint(buf, pos)
        elif wire == 2:
            size, pos = _varint(buf, pos)
            val = buf[pos : pos + size]
            pos += size
        elif wire == 5:
            val = buf[pos : pos + 4]
            pos += 4
        elif wire == 1:
            val = buf[pos : pos + 8]
            pos += 8
        else:
            raise ValueError(f"unsupported protobuf wire type {wire}")
        yield num, wire, val


def _enc_varint(value: int) -> bytes:
    if value < 0:
        value += 1 << 64
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _key(num: int, wire: int) -> bytes:
    return _enc_varint((num << 3) | wire)


def _ld(num: int, payload: bytes | str) -> bytes:
    if isinstance(payload, str):
        payload = payload.encode()
    return _key(num, 2) + _enc_varint(len(payload)) + payload


def _vi(num: int, value: int) -> bytes:
    return _key(num, 0) + _enc_varint(value)


# -- reading the source model -----------------------------------------------------------------
@dataclass
class _Tensor:
    dims: list[int]
    dtype: int
    raw: bytes

    def array(self):
        import numpy as np

        return np.frombuffer(self.raw, dtype=_NP_DTYPE[self.dtype]).reshape(self.dims)


@dataclass
class _Node:
    op: str
    inputs: list[str] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)


def _read_tensor(buf: bytes) -> tuple[str, _Tensor]:
    dims: list[int] = []
    dtype, name, raw = 0, "", b""
    for num, wire, val in _fields(buf):
        if num == 1:
            if wire == 2:  # packed
                pos = 0
                while pos < len(val):
                    d, pos = _varint(val, pos)
                    dims.append(d)
            else:
                dims.append(val)
        elif num == 2:
            dtype = val
        elif num == 8:
            name = bytes(val).decode()
        elif num == 9:
            raw = bytes(val)
        elif num in (4, 5, 7, 10, 11):  # float/int32/int64/double/uint64 data: not raw
            raise ValueError(f"initializer stored without raw_data (field {num})")
    return name, _Tensor(dims, dtype, raw)


def _read_graph(model: bytes) -> tuple[dict[str, _Tensor], list[_Node]]:
    graph = next(val for num, _w, val in _fields(model) if num == 7)
    inits: dict[str, _Tensor] = {}
    nodes: list[_Node] = []
    for num, _w, val in _fields(graph):
        if num == 5:
            name, tensor = _read_tensor(val)
            inits[name] = tensor
        elif num == 1:
            node = _Node("")
            for n, _w2, v in _fields(val):
                if n == 1:
                    node.inputs.append(bytes(v).decode())
                elif n == 2:
                    node.outputs.append(bytes(v).decode())
                elif n == 4:
                    node.op = bytes(v).decode()
            nodes.append(node)
    return inits, nodes


_BIAS = re.compile(r"encoder\.layer\.(\d+)\.(.+)\.bias$")


def _layer_weights(inits: dict[str, _Tensor], nodes: list[_Node]) -> dict[str, str]:
    """Map 'layer.{i}.{role}' to the quantized weight name feeding that role's MatMul."""
    producer = {o: n for n in nodes for o in n.outputs}
    consumers: dict[str, list[_Node]] = {}
    for n in nodes:
        for i in n.inputs:
            consumers.setdefault(i, []).append(n)
    found: dict[str, str] = {}
    for n in nodes:
        if n.op != "MatMul" or len(n.inputs) != 2:
            continue
        mul = producer.get(n.inputs[1])
        if mul is None or mul.op != "Mul":
            continue
        cast = producer.get(mul.inputs[0])
        if cast is None or cast.op != "Cast" or cast.inputs[0] not in inits:
            continue
        for add in consumers.get(n.outputs[0], []):
            bias = (
                next((i for i in add.inputs if _BIAS.search(i)), None) if add.op == "Add" else None
            )
            if bias:
                layer, role = _BIAS.search(bias).groups()
                found[f"layer.{layer}.{role}"] = cast.inputs[0]  # the int8 tensor; scale = mul[1]
                found[f"layer.{layer}.{role}.scale"] = mul.inputs[1]
    return found


# -- writing the fused model ------------------------------------------------------------------
class _Builder:
    def __init__(self) -> None:
        self.nodes: list[bytes] = []
        self.inits: list[bytes] = []
        self._n = 0

    def init(self, name: str, array) -> str:
        import numpy as np

        arr = np.ascontiguousarray(array)
        dtype = {
            np.dtype("float32"): FLOAT,
            np.dtype("int8"): INT8,
            np.dtype("int64"): INT64,
            np.dtype("int32"): INT32,
        }[arr.dtype]
        msg = b"".join(_vi(1, d) for d in arr.shape) + _vi(2, dtype) + _ld(8, name)
        self.inits.append(msg + _ld(9, arr.astype(arr.dtype.newbyteorder("<")).tobytes()))
        return name

    def dequant(self, name: str, q, scale) -> str:
        """int8 weights × float scale via Cast → Mul (folded by onnxruntime at load)."""
        self.init(name + "_q", q)
        self.init(name + "_scale", scale)
        self.node("Cast", [name + "_q"], [name + "_f"], to=FLOAT)
        self.node("Mul", [name + "_f", name + "_scale"], [name])
        return name

    def node(
        self, op: str, inputs: list[str], outputs: list[str], domain: str = "", **attrs
    ) -> str:
        self._n += 1
        msg = b"".join(_ld(1, i) for i in inputs) + b"".join(_ld(2, o) for o in outputs)
        msg += _ld(3, f"{op}_{self._n}") + _ld(4, op)
        for key, value in attrs.items():
            if isinstance(value, float):
                attr = _ld(1, key) + _key(2, 5) + struct.pack("<f", value) + _vi(20, 1)
            else:
                attr = _ld(1, key) + _vi(3, int(value)) + _vi(20, 2)
            msg += _ld(5, attr)
        if domain:
            msg += _ld(7, domain)
        self.nodes.append(msg)
        return outputs[0]

    @staticmethod
    def value_info(name: str, elem: int, dims: list[str | int]) -> bytes:
        shape = b"".join(_ld(1, _ld(2, d) if isinstance(d, str) else _vi(1, d)) for d in dims)
        tensor_type = _vi(1, elem) + _ld(2, shape)
        return _ld(1, name) + _ld(2, _ld(1, tensor_type))

    def model(self, inputs: list[bytes], outputs: list[bytes]) -> bytes:
        graph = b"".join(_ld(1, n) for n in self.nodes) + _ld(2, "minilm_fused")
        graph += b"".join(_ld(5, t) for t in self.inits)
        graph += b"".join(_ld(11, i) for i in inputs) + b"".join(_ld(12, o) for o in outputs)
        opsets = _ld(8, _ld(1, "") + _vi(2, 17)) + _ld(8, _ld(1, "com.microsoft") + _vi(2, 1))
        return _vi(1, 8) + _ld(2, "ragsift") + opsets + _ld(7, graph)


def build_fused_minilm(model: bytes, num_heads: int = 12, eps: float = 1e-12) -> bytes:
    """Serialized fused ModelProto for the pinned int8 all-MiniLM-L6-v2 export ``model``."""
    inits, nodes = _read_graph(model)
    roles = _layer_weights(inits, nodes)
    layers = sorted({int(k.split(".")[1]) for k in roles})
    if not layers or layers != list(range(len(layers))):
        raise ValueError("unexpected graph: encoder layers not found")

    def arr(name: str):
        return inits[name].array()

    def emb(name: str, prefix: str) -> str:
        if prefix + ".weight" in inits:
            return b.init(name, arr(prefix + ".weight"))
        return b.dequant(name, arr(prefix + ".weight_q"), arr(prefix + ".weight_scale"))

    b = _Builder()
    e = "inner.embeddings"
    b.node("Cast", ["input_ids"], ["ids32"], to=INT32)
    b.node("Cast", ["token_type_ids"], ["types32"], to=INT32)
    b.node("Cast", ["attention_mask"], ["mask32"], to=INT32)
    emb("word_emb", f"{e}.word_embeddings")
    emb("pos_emb", f"{e}.position_embeddings")
    emb("type_emb", f"{e}.token_type_embeddings")
    b.init("emb_ln_w", arr(f"{e}.LayerNorm.weight"))
    b.init("emb_ln_b", arr(f"{e}.LayerNorm.bias"))
    b.node(
        "EmbedLayerNormalization",
        ["ids32", "types32", "word_emb", "pos_emb", "type_emb", "emb_ln_w", "emb_ln_b", "mask32"],
        ["h0", "mask_index"],
        domain="com.microsoft",
        epsilon=eps,
    )
    hidden = "h0"
    for i in layers:
        out_name = "last_hidden_state" if i == layers[-1] else f"l{i}_h2"
        hidden = _encoder_layer(b, inits, roles, i, hidden, out_name, num_heads=num_heads, eps=eps)
    dims = ["batch", "sequence"]
    inputs = [
        b.value_info(n, INT64, dims) for n in ("input_ids", "attention_mask", "token_type_ids")
    ]
    hidden_size = int(inits[f"{e}.LayerNorm.weight"].dims[0])
    outputs = [b.value_info("last_hidden_state", FLOAT, [*dims, hidden_size])]
    return b.model(inputs, outputs)


def _encoder_layer(
    b: _Builder,
    inits: dict,
    roles: dict[str, str],
    i: int,
    hidden: str,
    out_name: str,
    *,
    num_heads: int,
    eps: float,
) -> str:
    """Encoder layer ``i`` added to ``b`` as fused kernels (one Attention over the joined
    q/k/v weights, SkipLayerNormalization, BiasGelu), reading ``hidden``; returns the name
    of its output (``out_name``)."""
    import numpy as np

    p = f"inner.encoder.layer.{i}"

    def arr(name: str):
        return inits[name].array()

    def w(role: str):
        key = f"layer.{i}.{role}"
        return arr(roles[key]), arr(roles[key + ".scale"])

    (qw, qs), (kw, ks), (vw, vs) = (
        w("attention.self.query"),
        w("attention.self.key"),
        w("attention.self.value"),
    )
    qkv = b.dequant(
        f"l{i}_qkv", np.concatenate([qw, kw, vw], axis=1), np.concatenate([qs, ks, vs], axis=1)
    )
    b.init(
        f"l{i}_qkv_b",
        np.concatenate([arr(f"{p}.attention.self.{r}.bias") for r in ("query", "key", "value")]),
    )
    att = b.node(
        "Attention",
        [hidden, qkv, f"l{i}_qkv_b", "mask_index"],
        [f"l{i}_att"],
        domain="com.microsoft",
        num_heads=num_heads,
    )
    wo = b.dequant(f"l{i}_o", *w("attention.output.dense"))
    proj = b.node("MatMul", [att, wo], [f"l{i}_proj"])
    b.init(f"l{i}_ln1_w", arr(f"{p}.attention.output.LayerNorm.weight"))
    b.init(f"l{i}_ln1_b", arr(f"{p}.attention.output.LayerNorm.bias"))
    b.init(f"l{i}_o_b", arr(f"{p}.attention.output.dense.bias"))
    h1 = b.node(
        "SkipLayerNormalization",
        [proj, hidden, f"l{i}_ln1_w", f"l{i}_ln1_b", f"l{i}_o_b"],
        [f"l{i}_h1"],
        domain="com.microsoft",
        epsilon=eps,
    )
    wi = b.dequant(f"l{i}_i", *w("intermediate.dense"))
    inter = b.node("MatMul", [h1, wi], [f"l{i}_inter"])
    b.init(f"l{i}_i_b", arr(f"{p}.intermediate.dense.bias"))
    gelu = b.node("BiasGelu", [inter, f"l{i}_i_b"], [f"l{i}_gelu"], domain="com.microsoft")
    wout = b.dequant(f"l{i}_out", *w("output.dense"))
    down = b.node("MatMul", [gelu, wout], [f"l{i}_down"])
    b.init(f"l{i}_ln2_w", arr(f"{p}.output.LayerNorm.weight"))
    b.init(f"l{i}_ln2_b", arr(f"{p}.output.LayerNorm.bias"))
    b.init(f"l{i}_out_b", arr(f"{p}.output.dense.bias"))
    return b.node(
        "SkipLayerNormalization",
        [down, h1, f"l{i}_ln2_w", f"l{i}_ln2_b", f"l{i}_out_b"],
        [out_name],
        domain="com.microsoft",
        epsilon=eps,
    )


# -- the optimised graph, cached on disk --------------------------------------------------------
# Rebuilding the fused graph and letting onnxruntime optimise it (constant-folding the int8
# weights to fp32, fusing) costs ~0.3 s of CPU on every start; loading the optimised graph
# onnxruntime saved costs ~0.1 s. So the first start saves it under the user cache dir
# (``weights.cache_dir()``), named by the weights' sha256, the onnxruntime version and
# ``FUSED_CACHE_VERSION``, beside a JSON sidecar with its own sha256 and (size, mtime_ns).
# It is saved at the EXTENDED level (hardware-independent: onnxruntime's layout transforms of
# the ALL level depend on the CPU) and always loaded at the ALL level, from the file, whether
# it was just written or found: every start runs the same graph, and its vectors are
# bit-identical to the in-memory build (tested). A file whose size or mtime changed is hashed
# again and must match the sidecar's sha256 (the trust model of ``weights.file_sha256``); a
# mismatch, an unreadable or unwritable cache dir, or any onnxruntime error on the cached
# path falls back silently to the in-memory build.
FUSED_CACHE_VERSION = 1


def fused_cache_path(weights_sha256: str) -> Any:
    from ragsift.embedders.runtime import onnxruntime
    from ragsift.paths import cache_dir

    ort = onnxruntime()
    name = f"minilm-fused-{weights_sha256[:16]}-ort{ort.__version__}-v{FUSED_CACHE_VERSION}.onnx"
    return cache_dir() / name


def fused_session(weights: Any, weights_sha256: str, opts: Any) -> Any:
    """An onnxruntime session of the fused graph of ``weights`` with session options ``opts``
    (ALL-level optimisation), loaded from the on-disk cache when possible (see above)."""
    from ragsift.embedders.runtime import onnxruntime

    ort = onnxruntime()
    providers = ["CPUExecutionProvider"]
    path = fused_cache_path(weights_sha256)
    try:
        if _cache_valid(path):
            return ort.InferenceSession(str(path), sess_options=opts, providers=providers)
    except Exception:
        pass
    model = build_fused_minilm(weights.read_bytes())
    try:
        _write_cache(path, model)
        return ort.InferenceSession(str(path), sess_options=opts, providers=providers)
    except Exception:
        return ort.InferenceSession(model, sess_options=opts, providers=providers)


def _sidecar(path: Any) -> Any:
    return path.with_name(path.name + ".json")


def _cache_valid(path: Any) -> bool:
    import json
    import os

    try:
        meta = json.loads(_sidecar(path).read_text(encoding="utf-8"))
        st = path.stat()
    except (OSError, ValueError):
        return False
    if not isinstance(meta, dict) or not isinstance(meta.get("sha256"), str):
        return False
    if meta.get("size") == st.st_size and meta.get("mtime_ns") == st.st_mtime_ns:
        return True
    # a fresh sha256 of the bytes, never weights.file_sha256's path/size/mtime-keyed cache
    from ragsift.embedders.weights import hash_file

    if meta.get("size") != st.st_size or hash_file(path) != meta["sha256"]:
        return False
    meta["mtime_ns"] = st.st_mtime_ns  # touched, same bytes: remember the new stamp
    try:
        tmp = _sidecar(path).with_name(f"{_sidecar(path).name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(meta), encoding="utf-8")
        os.replace(tmp, _sidecar(path))
    except OSError:
        pass
    return True


def _write_cache(path: Any, model: bytes) -> None:
    """Let onnxruntime optimise ``model`` (EXTENDED level) into ``path``, atomically, with its
    sidecar; raises on any failure (the caller falls back)."""
    import json
    import os

    from ragsift.embedders.runtime import log_severity, onnxruntime

    ort = onnxruntime()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        opts = ort.SessionOptions()
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
        opts.optimized_model_filepath = str(tmp)
        opts.intra_op_num_threads = 1
        opts.log_severity_level = log_severity()
        ort.InferenceSession(model, sess_options=opts, providers=["CPUExecutionProvider"])
        st = tmp.stat()
        # a fresh sha256 of the bytes, never weights.file_sha256's path/size/mtime-keyed cache
        from ragsift.embedders.weights import hash_file

        meta = {"sha256": hash_file(tmp), "size": st.st_size}
        os.replace(tmp, path)
        meta["mtime_ns"] = path.stat().st_mtime_ns
        side = _sidecar(path)
        side_tmp = side.with_name(f"{side.name}.{os.getpid()}.tmp")
        side_tmp.write_text(json.dumps(meta), encoding="utf-8")
        os.replace(side_tmp, side)
    finally:
        if tmp.exists():
            tmp.unlink()
