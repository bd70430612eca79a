"""The float32 copy of a quantised GGUF file (llama-cpp runtime's weights): a tiny file built in the test."""

from __future__ import annotations

import numpy as np
import pytest

gguf = pytest.importorskip("gguf")

from gguf import GGMLQuantizationType, GGUFReader, GGUFValueType, GGUFWriter  # noqa: E402
from gguf.quants import dequantize, quantize  # noqa: E402

from reasonscope.models.gguf_float32 import FILE_TYPE_ALL_F32, write_float32_gguf  # noqa: E402


@pytest.fixture
def quantised(tmp_path):
    """A GGUF file of two Q8_0 tensors and one float32 tensor, with string, integer and array metadata."""
    rng = np.random.default_rng(0)
    path = tmp_path / "tiny.Q8_0.gguf"
    w = GGUFWriter(path, "llama")
    w.add_uint32("general.file_type", 7)  # llama.cpp's MOSTLY_Q8_0
    w.add_string("tokenizer.chat_template", "{{ messages[0]['content'] }}")
    w.add_uint32("llama.block_count", 2)
    w.add_array("tokenizer.ggml.tokens", ["<s>", "a", "b"])
    w.add_array("tokenizer.ggml.token_type", [3, 1, 1])
    weights = {"blk.0.w": rng.normal(size=(4, 64)).astype(np.float32),
               "blk.1.w": rng.normal(size=(2, 32)).astype(np.float32)}
    for name, values in weights.items():
        w.add_tensor(name, quantize(values, GGMLQuantizationType.Q8_0), raw_dtype=GGMLQuantizationType.Q8_0)
    w.add_tensor("norm", np.arange(8, dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path, weights


def test_tensors_are_the_dequantised_values_in_float32(quantised, tmp_path):
    path, weights = quantised
    out = write_float32_gguf(path, tmp_path / "cache" / "tiny.f32.gguf")
    assert out == tmp_path / "cache" / "tiny.f32.gguf" and out.is_file()
    assert [p.name for p in out.parent.iterdir()] == ["tiny.f32.gguf"]  # no temporary file left behind
    src, f32 = GGUFReader(path), GGUFReader(out)
    assert [t.name for t in f32.tensors] == ["blk.0.w", "blk.1.w", "norm"]
    assert {t.tensor_type for t in f32.tensors} == {GGMLQuantizationType.F32}
    for s, t in zip(src.tensors, f32.tensors, strict=True):
        assert t.shape.tolist() == s.shape.tolist()
        expected = dequantize(s.data, s.tensor_type)
        assert np.array_equal(np.asarray(t.data).reshape(expected.shape), expected)
    # Q8_0 keeps each value within a block's scale / 127 of the original: the copy holds the quantised weights,
    # not the original ones
    got = np.asarray(f32.tensors[0].data).reshape(4, 64)
    assert not np.array_equal(got, weights["blk.0.w"])
    assert np.abs(got - weights["blk.0.w"]).max() < np.abs(weights["blk.0.w"]).max() / 127
    assert np.array_equal(np.asarray(f32.tensors[2].data), np.arange(8, dtype=np.float32))


def test_metadata_is_copied_but_the_file_type(quantised, tmp_path):
    path, _ = quantised
    out = write_float32_gguf(path, tmp_path / "tiny.f32.gguf")
    src, f32 = GGUFReader(path), GGUFReader(out)
    keys = [k for k in src.fields if not k.startswith("GGUF.")]
    assert keys == [k for k in f32.fields if not k.startswith("GGUF.")]
    for key in keys:
        if key == "general.file_type":
            continue
        assert f32.fields[key].contents() == src.fields[key].contents(), key
        assert f32.fields[key].types == src.fields[key].types, key
    assert f32.fields["general.file_type"].contents() == FILE_TYPE_ALL_F32 == 0
    assert f32.fields["general.file_type"].types == [GGUFValueType.UINT32]
    assert f32.fields["tokenizer.ggml.tokens"].contents() == ["<s>", "a", "b"]


def test_errors_name_the_file(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"GGUF file not found: .*missing\.gguf"):
        write_float32_gguf(tmp_path / "missing.gguf", tmp_path / "out.gguf")
    bad = tmp_path / "notes.gguf"
    bad.write_text("not a model\n")
    with pytest.raises(ValueError, match=r"notes\.gguf: not a readable GGUF file"):
        write_float32_gguf(bad, tmp_path / "out.gguf")
    assert not (tmp_path / "out.gguf").exists()



def test_a_failed_write_leaves_no_temporary_file(quantised, tmp_path, monkeypatch):
    """A copy that fails while its tensors are written (a full disk) removes its partial file: the cache
    folder keeps no half-written leftover (540 MB for the embedded model) and no target."""
    path, _ = quantised

    def full_disk(self, *args, **kwargs):
        assert any(self.path.parent.iterdir())  # the partial file exists when writing fails
        raise OSError("No space left on device")

    monkeypatch.setattr(GGUFWriter, "write_tensors_to_file", full_disk)
    out = tmp_path / "cache" / "tiny.f32.gguf"
    with pytest.raises(OSError, match="No space left on device"):
        write_float32_gguf(path, out)
    assert list(out.parent.iterdir()) == []
