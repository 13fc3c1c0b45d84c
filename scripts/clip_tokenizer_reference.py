#!/usr/bin/env python3
"""Reference token ids for tests/tokenizer_test.py, from the two CLIP tokenizers in use, both built from the merges
file scripts/setup.sh fetched (.deps/clip/bpe_simple_vocab_16e6.txt.gz):
- transformers' CLIPTokenizer (what diffusers' pipelines call), from a vocab.json and merges.txt derived here;
- open_clip's SimpleTokenizer, loaded from the open_clip_torch wheel setup.sh downloaded (needs ftfy).
Writes tests/models/tokenizer/cases.json. Needs torch, transformers, ftfy (not needed by the test).

Usage: .venv/bin/pip install ftfy && .venv/bin/python scripts/clip_tokenizer_reference.py
"""
import glob
import gzip
import importlib.util
import json
import os
import tempfile
import zipfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BPE = os.path.join(REPO, ".deps/clip/bpe_simple_vocab_16e6.txt.gz")
OUT = os.path.join(REPO, "tests/models/tokenizer/cases.json")
N_MERGES = 49152 - 256 - 2

PROMPTS = [
    "a photo of an astronaut riding a horse on mars",
    "A Photo Of An ASTRONAUT, Trending On ArtStation",
    "hello, world! how's it going?",
    "it's, you're, we've, I'm, they'll, he'd, don't",
    "IT'S YOU'RE WE'VE",
    "a' b'' 's 'S 'll' ''d !'s",
    "1234567890 and 3.14159, 42nd street, 2024-01-01",
    "   leading and trailing spaces   ",
    "tabs\tand\nnewlines\r\n  and   runs",
    "café, naïve, résumé, Ångström, Zürich",
    "cafe\u0301 and A\u030a: decomposed accents",
    "\u212b angstrom sign, \u2126 ohm sign",
    "東京タワーの夜景、美しい",
    "中文测试，标点。",
    "한국어 텍스트",
    "emoji 🚀🔥 and 👩‍👩‍👧 family, ❤️",
    "Привет, МИР",
    "ΟΔΟΣ ΣΙΣΥΦΟΣ",
    "İstanbul ıIi",
    "straße STRASSE ß",
    "hyphen-ated words_with_underscores and/slashes",
    "(masterpiece:1.2), ((best quality)), [bad hands], {blurry}",
    "!!!??? ... --- *** ~~~",
    "&amp; &lt;tag&gt; html entities",
    "<|startoftext|>literal special<|endoftext|> tokens",
    "<|ENDOFTEXT|> in capitals",
    "<|ENDOFTEXT|>!? and <|StartOfText|>)",
    "letters new in Unicode 15: \U00031350\U0002ebf0 \U00011f04",
    "ｆｕｌｌｗｉｄｔｈ ＡＢＣ １２３",
    "ﬁne ligature ﬀ",
    "Ⅻ ½ ² ٣ numbers in other scripts",
    "\u00a0nbsp\u3000ideographic space\u2028line separator",
    "zero\u200bwidth space",
    "control \x01 chars \x7f",
    "",
    "a very detailed oil painting of " + ", ".join(f"a {w} castle" for w in
        ["red", "blue", "green", "golden", "misty", "ancient", "floating", "crystal", "ruined", "giant", "tiny",
         "snowy", "burning", "haunted", "royal", "secret", "sunken", "sky", "desert", "forest"]),
]


def hf_tokenizer(tmp):
    """transformers' CLIPTokenizer built offline from the merges file: the vocabulary is the 256 byte symbols,
    the same with </w>, one token per merge, then the two special tokens (as open_clip and OpenAI build it)."""
    from transformers import CLIPTokenizer
    lines = gzip.open(BPE).read().decode("utf-8").split("\n")[1:N_MERGES + 1]
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:] + [256 + n for n in range(256 - len(bs))]
    vocab = [chr(c) for c in cs]
    vocab += [v + "</w>" for v in vocab] + ["".join(m.split()) for m in lines] + ["<|startoftext|>", "<|endoftext|>"]
    with open(os.path.join(tmp, "vocab.json"), "w") as f:
        json.dump({v: i for i, v in enumerate(vocab)}, f)
    with open(os.path.join(tmp, "merges.txt"), "w") as f:
        f.write("#version: 0.2\n" + "\n".join(lines) + "\n")
    tok = CLIPTokenizer.from_pretrained(tmp, model_max_length=77)
    assert len(tok) == 49408, len(tok)
    return tok


def open_clip_tokenizer(tmp):
    """open_clip's SimpleTokenizer, its module file and merges taken from the wheel (not its package, which
    imports timm and more)."""
    wheel = sorted(glob.glob(os.path.join(REPO, ".deps/dl/open_clip_torch-*.whl")))[-1]
    with zipfile.ZipFile(wheel) as z:
        for name in ("open_clip/tokenizer.py", "open_clip/bpe_simple_vocab_16e6.txt.gz"):
            with open(os.path.join(tmp, os.path.basename(name)), "wb") as f:
                f.write(z.read(name))
    spec = importlib.util.spec_from_file_location("open_clip_tokenizer", os.path.join(tmp, "tokenizer.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.SimpleTokenizer(), wheel


def main():
    with tempfile.TemporaryDirectory() as tmp:
        hf = hf_tokenizer(tmp)
        oc, wheel = open_clip_tokenizer(tmp)
        cases = []
        for p in PROMPTS:
            t = hf(p, padding="max_length", max_length=77, truncation=True).input_ids
            o = oc(p)[0].tolist()
            cases.append({"text": p, "transformers": t, "open_clip": o})
    meta = {"merges": "bpe_simple_vocab_16e6.txt.gz from " + os.path.basename(wheel),
            "transformers": "CLIPTokenizer(vocab.json, merges.txt), padding='max_length', max_length=77, "
                            "truncation=True: pads with <|endoftext|> 49407",
            "open_clip": "SimpleTokenizer()(text): ftfy + html unescape, pads with 0"}
    with open(OUT, "w") as f:
        json.dump({"about": meta, "cases": cases}, f, ensure_ascii=False, indent=0)
    diff = [c["text"] for c in cases if [x for x in c["open_clip"] if x] != [x for x in c["transformers"] if x != 49407] + [49407]]
    print(f"wrote {OUT}: {len(cases)} prompts; open_clip differs from transformers (beyond padding) on {len(diff)}:")
    for d in diff:
        print("  ", repr(d))


if __name__ == "__main__":
    main()
