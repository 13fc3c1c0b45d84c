#!/usr/bin/env python3
"""House rules of src/ that a reader can check: no file over 600 lines, no function over 80 lines unless the comment
right above it says why (a line starting "Long:"). Prints each breach; exits 1 if any (a CI step).

Usage: scripts/house_check.py [--list]   (--list: every function over 80 lines, with or without a reason)

Functions are found by their braces after comments and literals are blanked: a `{` whose header ends in `)` (plus
qualifiers) at namespace or class scope opens one. Lambdas and blocks count toward the function that holds them.
"""
from __future__ import annotations

import os
import re
import sys

MAX_FILE_LINES = 600
MAX_FUNCTION_LINES = 80
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


def strip(src: str) -> str:
    """Comments and string/char literals blanked, line breaks kept."""
    out=[]; i=0; n=len(src)
    while i<n:
        c=src[i]
        if src.startswith("//",i):
            j=src.find("\n",i); j=n if j<0 else j; out.append(" "*(j-i)); i=j
        elif src.startswith("/*",i):
            j=src.find("*/",i+2); j=n if j<0 else j+2; out.append(re.sub(r"[^\n]"," ",src[i:j])); i=j
        elif src.startswith('R"',i):
            m=re.match(r'R"([^(]*)\(',src[i:]); d=m.group(1); j=src.find(")"+d+'"',i)+len(d)+2
            out.append(re.sub(r"[^\n]"," ",src[i:j])); i=j
        elif c in "\"'":
            j=i+1
            while j<n and src[j]!=c:
                j+= 2 if src[j]=="\\" else 1
            out.append(c+" "*(j-i-1)+c); i=j+1
        else: out.append(c); i+=1
    return "".join(out)
def functions(path: str) -> list[tuple[int, int, str]]:
    """(lines, first line, name) of each function in the file."""
    s=strip(open(path,encoding="utf-8",errors="replace").read())
    stack=[]; last=0; res=[]
    for i,c in enumerate(s):
        if c in ";{}":
            if c=="{":
                head=s[last:i]; enclosing=stack[-1][0] if stack else "ns"
                h=head.strip()
                if re.search(r"\b(namespace|struct|class|union|enum)\b",h) and "(" not in h.split("{")[0].split(":")[0]: kind="ns"
                elif enclosing=="ns" and re.search(r"\)\s*(const|override|noexcept|final|mutable|\s|->\s*[\w:<>,\s*&]+)*$",h) and not re.match(r"(if|for|while|switch|catch)\b",h) and not h.startswith("="):
                    kind="fn"
                else: kind="blk"
                start=s.count("\n",0,i - len(head) + (len(head)-len(head.lstrip())))+1
                stack.append((kind,start,h))
            elif c=="}":
                if stack:
                    kind,start,h=stack.pop()
                    if kind=="fn":
                        end=s.count("\n",0,i)+1
                        name=re.search(r"([~\w:]+)\s*\(",h); res.append((end-start+1,start,name.group(1) if name else h[:40]))
            last=i+1
    return res

def reason_above(lines: list[str], first: int) -> bool:
    """A "Long:" line in the comment block that ends right above the function's first line."""
    i = first - 2
    while i >= 0 and lines[i].strip().startswith(("//", "template")):
        if re.match(r"\s*//\s*Long:", lines[i]):
            return True
        i -= 1
    return False


def main(argv: list[str]) -> int:
    show_all = "--list" in argv
    breaches = []
    for dp, _, fs in sorted(os.walk(os.path.join(ROOT, "src"))):
        for f in sorted(fs):
            if not f.endswith((".cpp", ".h")):
                continue
            p = os.path.join(dp, f)
            rel = os.path.relpath(p, ROOT)
            lines = open(p, encoding="utf-8", errors="replace").read().split("\n")
            if len(lines) - 1 > MAX_FILE_LINES:
                breaches.append(f"{rel}: {len(lines) - 1} lines (at most {MAX_FILE_LINES})")
            for n, first, name in functions(p):
                if n <= MAX_FUNCTION_LINES:
                    continue
                why = reason_above(lines, first)
                if show_all or not why:
                    tag = "has a reason" if why else f"over {MAX_FUNCTION_LINES} lines without a 'Long:' reason"
                    (print if why else breaches.append)(f"{rel}:{first}: {name}: {n} lines, {tag}")
    for b in breaches:
        print(b)
    print(f"house check: {len(breaches)} breaches")
    return 1 if breaches else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
