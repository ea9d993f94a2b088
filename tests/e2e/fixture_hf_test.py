"""Every architecture's reference fixture gives its reference logits from a Hugging Face folder
of the same weights too (issue 12): tools/gguf_to_hf writes the folder (HF tensor names,
rotate_half q/k rows for llama, Gemma norms without the folded +1, config.json from the
file's metadata), and tandem-logits compares its logits at all 64 positions with llama.cpp's
NAME.logits.npy: max abs <= 5e-3 and rms <= 5e-4, gemma max abs <= 1e-2 (fixtures README).
The GGUF files themselves are checked by client/logits/fixture_logits_test.cc.

Needs TANDEM_BIN and TANDEM_SHARED (set by CTest).
"""
import json
import os
import re
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "ops"))
import opslib  # noqa: E402  (the shared test runner)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.environ["TANDEM_BIN"]
FIXTURES = os.path.join(os.environ["TANDEM_SHARED"], "models", "fixtures")
ARCHITECTURES = ["llama", "llama3", "qwen2", "qwen3", "phi3", "gemma2", "gemma3"]


def token_ids():
    with open(os.path.join(FIXTURES, "MANIFEST.json")) as f:
        return json.load(f)["token_ids"]["ids"]


def compare(model, reference, atol):
    """(exit code, max abs, rms) of tandem-logits --compare."""
    r = subprocess.run([os.path.join(BIN, "tandem-logits"), "--model", model, "--tokens",
                        ",".join(map(str, token_ids())), "--compare", reference, "--atol",
                        str(atol)], capture_output=True, text=True, timeout=300)
    max_abs = re.search(r"^max_abs (\S+)", r.stdout, re.M)
    rms = re.search(r"^rms (\S+)", r.stdout, re.M)
    assert max_abs and rms, (r.returncode, r.stdout, r.stderr)
    return r.returncode, float(max_abs.group(1)), float(rms.group(1))


def test_every_architecture_matches_its_reference_from_a_hugging_face_folder():
    with tempfile.TemporaryDirectory() as tmp:
        for arch in ARCHITECTURES:
            gguf = os.path.join(FIXTURES, f"{arch}-F16.gguf")
            folder = os.path.join(tmp, arch)
            r = subprocess.run([os.path.join(ROOT, "tools", "gguf_to_hf"), gguf, folder],
                               capture_output=True, text=True, timeout=300)
            assert r.returncode == 0, (arch, r.stderr)
            assert os.path.exists(os.path.join(folder, "model.safetensors")), arch
            atol = 1e-2 if arch.startswith("gemma") else 5e-3
            code, max_abs, rms = compare(folder, gguf.replace(".gguf", ".logits.npy"), atol)
            print(f"{arch}: HF folder max abs {max_abs:.3g}, rms {rms:.3g}")
            assert code == 0 and max_abs <= atol and rms <= 5e-4, (arch, code, max_abs, rms)


def test_a_converted_folder_whose_weights_are_damaged_misses_the_reference():
    # The comparison can fail: the llama folder with one wrong hyper-parameter (its RMSNorm
    # epsilon) is a different model.
    with tempfile.TemporaryDirectory() as tmp:
        folder = os.path.join(tmp, "llama")
        r = subprocess.run([os.path.join(ROOT, "tools", "gguf_to_hf"),
                            os.path.join(FIXTURES, "llama-F16.gguf"), folder],
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr
        config = json.load(open(os.path.join(folder, "config.json")))
        config["rms_norm_eps"] = 0.5
        with open(os.path.join(folder, "config.json"), "w") as f:
            json.dump(config, f)
        code, max_abs, _ = compare(folder, os.path.join(FIXTURES, "llama-F16.logits.npy"), 5e-3)
        assert code == 1 and max_abs > 5e-3, (code, max_abs)


def test_a_file_it_cannot_convert_is_refused_naming_it():
    with tempfile.TemporaryDirectory() as tmp:
        quantized = os.path.join(FIXTURES, "llama-Q8_0.gguf")
        r = subprocess.run([os.path.join(ROOT, "tools", "gguf_to_hf"), quantized,
                            os.path.join(tmp, "q")], capture_output=True, text=True, timeout=60)
        assert r.returncode == 1, r.returncode
        assert "llama-Q8_0.gguf" in r.stderr and "not F32 or F16" in r.stderr, r.stderr


if __name__ == "__main__":
    sys.exit(opslib.run_tests(globals()))
