"""Evaluate a saved ML Program (.mlpackage) without Core ML: a reference interpreter for tests on Linux.

Core ML cannot run outside macOS, but the program a package holds (its MIL operations and stored
weights) can be read anywhere with coremltools. This module evaluates that program op by op in
PyTorch float32 and rounds every float16 result to float16, as a float16 device stores it. It
knows the operations the Whisper export uses and refuses any other, so a test fails rather than
guessing. It checks the export (graph, weights, inputs and outputs); it is not Core ML's runtime,
whose kernels round and accumulate in their own ways.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from whisperbench.models.coreml_compress import load_program  # noqa: E402  (one reader of saved programs)


def _is_fp16(var) -> bool:
    from coremltools.converters.mil.mil import types

    dtype = var.dtype
    return dtype == types.fp16 or (types.is_tensor(dtype) and dtype.get_primitive() == types.fp16)


def _slice(x, begin, end, stride=None, begin_mask=None, end_mask=None, squeeze_mask=None):
    index, squeeze = [], []
    for axis in range(x.ndim):
        b = None if begin_mask is not None and begin_mask[axis] else int(begin[axis])
        e = None if end_mask is not None and end_mask[axis] else int(end[axis])
        s = 1 if stride is None else int(stride[axis])
        if squeeze_mask is not None and squeeze_mask[axis]:
            index.append(slice(b, b + 1 if b != -1 else None, 1))
            squeeze.append(axis)
        else:
            index.append(slice(b, e, s))
    out = x[tuple(index)]
    return out.squeeze(tuple(squeeze)) if squeeze else out


def _conv(x, weight, bias=None, strides=None, pad_type="valid", pad=None, dilations=None, groups=1):
    if pad_type != "custom" or pad is None:
        if pad_type != "valid":
            raise NotImplementedError(f"conv pad_type {pad_type}")
        pad = [0] * (2 * (x.ndim - 2))
    x = torch.nn.functional.pad(x, [int(pad[2]), int(pad[3]), int(pad[0]), int(pad[1])])
    return torch.nn.functional.conv2d(
        x,
        weight,
        bias,
        stride=tuple(int(s) for s in strides),
        dilation=tuple(int(d) for d in dilations),
        groups=int(groups),
    )


def _batch_norm(x, mean, variance, gamma=None, beta=None, epsilon=1e-5):
    shape = (1, -1) + (1,) * (x.ndim - 2)
    out = (x - mean.view(shape)) / torch.sqrt(variance.view(shape) + float(epsilon))
    if gamma is not None:
        out = out * gamma.view(shape)
    if beta is not None:
        out = out + beta.view(shape)
    return out


OPS = {
    "add": lambda x, y: x + y,
    "sub": lambda x, y: x - y,
    "mul": lambda x, y: x * y,
    "real_div": lambda x, y: x / y,
    "abs": lambda x: x.abs(),
    "inverse": lambda x, epsilon=1e-4: 1.0 / (x + float(epsilon)),
    "rsqrt": lambda x, epsilon=1e-12: torch.rsqrt(x + float(epsilon)),
    "reduce_mean": lambda x, axes, keep_dims=False: x.mean(dim=tuple(int(a) for a in axes), keepdim=bool(keep_dims)),
    "reduce_max": lambda x, axes, keep_dims=False: x.amax(dim=tuple(int(a) for a in axes), keepdim=bool(keep_dims)),
    "gelu": lambda x, mode="EXACT": torch.nn.functional.gelu(x, approximate="none" if mode == "EXACT" else "tanh"),
    "softmax": lambda x, axis: x.softmax(dim=int(axis)),
    "transpose": lambda x, perm: x.permute(*(int(p) for p in perm)),
    "expand_dims": lambda x, axes: x.reshape(_expanded_shape(x.shape, axes)),
    "concat": lambda values, axis, interleave=False: torch.cat(values, dim=int(axis)),
    "einsum": lambda values, equation: torch.einsum(equation, *values),
    "gather": lambda x, indices, axis=0, batch_dims=0: torch.index_select(
        x, int(axis), indices.long().reshape(-1)
    ).reshape(tuple(x.shape[: int(axis)]) + tuple(indices.shape) + tuple(x.shape[int(axis) + 1 :])),
    "linear": lambda x, weight, bias=None: torch.nn.functional.linear(x, weight, bias),
    "slice_by_index": _slice,
    "conv": _conv,
    "batch_norm": _batch_norm,
}


DATA_MOVEMENT = {"slice_by_index", "transpose", "expand_dims", "concat", "gather"}


def _expanded_shape(shape, axes):
    shape = list(shape)
    rank = len(shape) + len(axes)
    for axis in sorted(int(a) % rank for a in axes):
        shape.insert(axis, 1)
    return shape


def _as_tensor(value):
    if isinstance(value, np.ndarray) and value.dtype.kind == "f":
        return torch.from_numpy(value.astype(np.float32))
    if isinstance(value, np.ndarray) and value.dtype.kind in "iu":
        return torch.from_numpy(value.astype(np.int64))
    return value


class ProgramRunner:
    """``run(inputs) -> outputs`` over numpy arrays, for the ``main`` function of a package."""

    def __init__(self, package: str | Path):
        self.function = load_program(package).functions["main"]
        self.ops_seen: set[str] = set()
        self.constants = {
            op.outputs[0].name: self._constant(op.outputs[0].val)
            for op in self.function.operations
            if op.op_type == "const"
        }

    @staticmethod
    def _constant(value):
        return _as_tensor(np.asarray(value)) if isinstance(value, np.ndarray) else value

    def run(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        env: dict[str, object] = dict(self.constants)
        for name, var in self.function.inputs.items():
            if name not in inputs:
                raise KeyError(f"missing input {name}")
            value = np.asarray(inputs[name])
            expected = tuple(var.shape)
            if value.shape != expected:
                raise ValueError(f"input {name}: shape {value.shape}, the program expects {expected}")
            env[name] = _as_tensor(value.astype(np.float16) if _is_fp16(var) else value)
        for op in self.function.operations:
            if op.op_type == "const":
                continue
            if op.op_type not in OPS:
                raise NotImplementedError(
                    f"op {op.op_type} ({op.name}) is not implemented by the reference interpreter"
                )
            self.ops_seen.add(op.op_type)
            kwargs = {}
            for key, value in op.inputs.items():
                if isinstance(value, (list, tuple)):
                    kwargs[key] = [self._value(env, v) for v in value]
                else:
                    kwargs[key] = self._value(env, value)
            result = OPS[op.op_type](**kwargs)
            (out,) = op.outputs
            if op.op_type in DATA_MOVEMENT:  # values pass through unchanged: nothing to round
                pass
            elif isinstance(result, torch.Tensor) and result.is_floating_point():
                result = result.half().float() if _is_fp16(out) else result.float()
            env[out.name] = result
        return {var.name: self._numpy(env[var.name], var) for var in self.function.outputs}

    @staticmethod
    def _value(env, var):
        if var.name in env:
            return env[var.name]
        if var.val is not None:
            return ProgramRunner._constant(var.val)
        raise KeyError(f"no value for {var.name}")

    @staticmethod
    def _numpy(value, var) -> np.ndarray:
        array = value.numpy() if isinstance(value, torch.Tensor) else np.asarray(value)
        return array.astype(np.float16) if _is_fp16(var) else array


class ReferenceStepModel:
    """Both exported packages behind the greedy loop's StepModel interface, run by :class:`ProgramRunner`."""

    def __init__(self, folder: str | Path):
        from whisperbench.models.coreml import DECODER_PACKAGE, ENCODER_PACKAGE, read_info

        info = read_info(folder)
        self.dims = info["dims"]
        self.float_dtype = np.float16 if info["precision"] == "float16" else np.float32
        self.encoder = ProgramRunner(Path(folder) / ENCODER_PACKAGE)
        self.decoder = ProgramRunner(Path(folder) / DECODER_PACKAGE)

    def encode(self, inputs):
        return self.encoder.run(inputs)

    def decode(self, inputs):
        return self.decoder.run(inputs)
