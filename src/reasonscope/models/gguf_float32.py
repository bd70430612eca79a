"""A float32 copy of a quantised GGUF file: the same weights torch runs, for llama.cpp.

The embedded SmolLM2 ships as a Q4_1 GGUF file. The torch runtime dequantises it to float32 once (through
transformers) and runs float32 products; llama.cpp run on the Q4_1 file itself multiplies 4-bit weights by
activations it rounds to 8 bits, so its greedy answers and label log-probabilities drift from torch's
(measured on the demo's prompts: the same text for 6 to 10 of 16, log-probabilities up to 0.4 nats apart).
:func:`write_float32_gguf` writes the file llama.cpp reads instead: every tensor dequantised to float32 with
``gguf``'s own dequantisation (the one transformers uses), in llama.cpp's tensor layout, and every metadata
field (architecture, vocabulary, chat template) copied unchanged except ``general.file_type`` (0: all
float32). On it llama.cpp and torch compute with the same weights in the same precision (agreement measured
in ``benchmarks/generation_runtimes.py``; docs/performance.md).
"""

from __future__ import annotations

import os
from pathlib import Path

FILE_TYPE_ALL_F32 = 0
"""``general.file_type`` of a GGUF file whose tensors are all float32 (llama.cpp's ``LLAMA_FTYPE_ALL_F32``)."""


def write_float32_gguf(source: str | Path, target: str | Path) -> Path:
    """Write ``source`` with every tensor dequantised to float32 to ``target``; returns ``target``.

    The file is written next to ``target`` under a temporary name and renamed, so a reader never sees a half
    file and a concurrent writer of the same target does no harm (the last rename wins; both are equal); a
    write that fails removes its temporary file.

    Raises:
        FileNotFoundError: When ``source`` does not exist.
        ValueError: When ``source`` is not a GGUF file (its message names the file).
    """
    import numpy as np
    from gguf import GGUFReader, GGUFValueType, GGUFWriter
    from gguf.quants import dequantize

    source, target = Path(source), Path(target)
    if not source.is_file():
        raise FileNotFoundError(f"GGUF file not found: {source}")
    try:
        reader = GGUFReader(source)
    except Exception as exc:  # gguf raises ValueError/struct errors on a file of another kind
        raise ValueError(f"{source}: not a readable GGUF file ({type(exc).__name__}: {exc})") from exc
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f"{target.name}.tmp{os.getpid()}")
    writer = GGUFWriter(tmp, str(reader.fields["general.architecture"].contents()))
    try:
        for name, field in reader.fields.items():
            if name.startswith("GGUF.") or name == "general.architecture":  # the header, written by the writer
                continue
            if name == "general.file_type":
                writer.add_uint32(name, FILE_TYPE_ALL_F32)
            elif field.types[0] == GGUFValueType.ARRAY:
                writer.add_key_value(name, field.contents(), GGUFValueType.ARRAY, sub_type=field.types[-1])
            else:
                writer.add_key_value(name, field.contents(), field.types[0])
        for tensor in reader.tensors:
            shape = [int(n) for n in reversed(tensor.shape.tolist())]  # GGUF lists dimensions innermost first
            values = dequantize(tensor.data, tensor.tensor_type).astype(np.float32, copy=False).reshape(shape)
            writer.add_tensor(tensor.name, values)
        writer.write_header_to_file()
        writer.write_kv_data_to_file()
        writer.write_tensors_to_file()
    except BaseException:
        writer.close()
        tmp.unlink(missing_ok=True)  # no half-written copy left in the cache (540 MB for the embedded model)
        raise
    writer.close()
    tmp.replace(target)
    return target
