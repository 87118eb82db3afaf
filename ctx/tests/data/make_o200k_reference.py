#!/usr/bin/env python3
"""Writes o200k_reference.jsonl: test strings with their o200k_base token counts from
OpenAI's Python `tiktoken` (the reference implementation), for mcp's token counter test.

The machines have no internet, so tiktoken reads the vocabulary file that the tiktoken-rs
crate bundles (the same o200k_base.tiktoken OpenAI publishes; its sha256 is checked by
tiktoken against the published hash). Strings: lines and blocks of this repository's
sources and docs (code and prose), Unicode samples, and random mixes from a fixed seed.

    pip install tiktoken
    python3 ctx/tests/data/make_o200k_reference.py
"""
import glob
import json
import os
import random

import tiktoken
import tiktoken.load
import tiktoken_ext.openai_public as public

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
VOCAB = glob.glob(os.path.expanduser(
    "~/.cargo/registry/src/*/tiktoken-rs-0.12.1/assets/o200k_base.tiktoken"))[0]

_load = tiktoken.load.load_tiktoken_bpe
public.load_tiktoken_bpe = lambda url, expected_hash=None: _load(VOCAB, expected_hash)
encoding = tiktoken.Encoding(**public.o200k_base())

rng = random.Random(20261205)
strings = []

def source_texts():
    patterns = ["examples/demo/**/*.c", "examples/demo/**/*.h", "examples/demo/**/*.cpp",
                "examples/demo/**/*.hpp", "docs/*.md", "README.md", "mcp/src/**/*.rs",
                "lang/src/**/*.rs"]
    for pattern in patterns:
        for path in sorted(glob.glob(os.path.join(ROOT, pattern), recursive=True)):
            with open(path, encoding="utf-8") as f:
                yield f.read()

for text in source_texts():
    lines = [line for line in text.splitlines() if line.strip()]
    for line in rng.sample(lines, min(len(lines), 12)):
        strings.append(line)
    for _ in range(3):
        start = rng.randrange(max(1, len(text) - 400))
        strings.append(text[start:start + rng.randrange(40, 400)])

unicode = ["naïve café déjà vu", "日本語のテキストと漢字", "中文字符和标点，。", "한국어 문장입니다",
           "Ελληνικά γράμματα", "русский текст", "עברית מימין לשמאל", "العربية",
           "emoji 🎉🚀👩‍💻 and flags 🇫🇷", "math ∑∫√∞ ≤ ≥ ≠", "tabs\tand\nnewlines\r\n",
           "   leading and trailing spaces   ", "", "a", "0123456789" * 5,
           "snake_case_identifier camelCaseIdentifier SCREAMING_CASE ns::Class::method"]
strings.extend(unicode)
alphabet = list("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 _-:;.,(){}[]<>\n\t'\"é日🎉ß∑")
while len(strings) < 1200:
    strings.append("".join(rng.choice(alphabet) for _ in range(rng.randrange(1, 120))))

with open(os.path.join(HERE, "o200k_reference.jsonl"), "w", encoding="utf-8") as out:
    for text in strings:
        out.write(json.dumps({"text": text, "tokens": len(encoding.encode_ordinary(text))},
                             ensure_ascii=False) + "\n")
print(f"{len(strings)} strings")
