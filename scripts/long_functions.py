#!/usr/bin/env python3
"""scripts/long_functions.py — lists the C++ functions longer than a limit
(issue 46: none in the product over 100 lines).

  scripts/long_functions.py [--max 100] [PATH ...]   (default: the product folders)

A function is a brace block at namespace or class scope whose head has a
parameter list (`name(...) ... {`); its length runs from the first line of
that head to its closing brace. Lambdas and blocks inside a body count as
part of that body. Comments, string and character literals (raw strings
too) and preprocessor lines are blanked first. A heuristic, not a parser:
it reads brace-initialised variables (`x = {...}`, `T x{...}`) as data,
not functions. Prints `path:line: name (N lines)` per long function, longest
first; exits 1 when there is one.
"""
import argparse
import os
import re
import sys

PRODUCT = ["api", "core", "daemon", "measure", "onboarding", "registry", "sampler", "trainer", "tuner", "tools"]
SOURCE_ENDINGS = (".cc", ".h", ".cu")


def blank_non_code(text):
    """The text with comments, literals and preprocessor lines turned into
    spaces (newlines kept, so line numbers stay)."""
    out = []
    i, n = 0, len(text)
    line_start = True
    while i < n:
        c = text[i]
        if line_start and c == "#":  # preprocessor line, with its continuations
            while i < n and not (text[i] == "\n" and text[i - 1] != "\\"):
                out.append("\n" if text[i] == "\n" else " ")
                i += 1
            continue
        if c == "\n":
            line_start = True
            out.append(c)
            i += 1
            continue
        if not c.isspace():
            line_start = False
        if text.startswith("//", i):
            while i < n and text[i] != "\n":
                out.append(" ")
                i += 1
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            out.extend("\n" if ch == "\n" else " " for ch in text[i:end])
            i = end
        elif c == "R" and text.startswith('R"', i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r'R"([^()\\\s]{0,16})\(', text[i:])
            if not m:
                out.append(c)
                i += 1
                continue
            close = ")" + m.group(1) + '"'
            end = text.find(close, i + m.end())
            end = n if end < 0 else end + len(close)
            out.extend("\n" if ch == "\n" else " " for ch in text[i:end])
            i = end
        elif c == '"' or (c == "'" and not (i > 0 and text[i - 1].isalnum() and i + 1 < n and text[i + 1].isalnum())):
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.extend(" " for _ in text[i : j + 1])
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def head_kind(head):
    """What a `{` opens, from the text since the last `;`, `{` or `}` of the
    enclosing scope: 'scope' (namespace, class), 'function' or 'data'."""
    h = " ".join(head.split())
    if not h or re.match(r"^(template\s*<.*>\s*)?(namespace|extern|class|struct|union|enum)\b", h):
        return "scope"
    if re.search(r"\b(class|struct|union|enum)\s+\w+[^()]*$", h) and "(" not in h:
        return "scope"
    h = re.sub(r"\boperator\s*[^\s(]*\s*\(", "op(", h)  # operator= / operator() / operator<
    paren = h.find("(")
    if paren < 0 or "=" in h[:paren]:
        return "data"
    return "function"


def function_name(head):
    h = re.sub(r"\boperator\s*([^\s(]*)\s*\(", r"operator\1(", " ".join(head.split()))
    m = re.search(r"([~\w:]+(?:operator[^\s(]*)?)\s*\(", h)
    if not m:
        return h[:40]
    if re.fullmatch(r"[A-Z][A-Z0-9_]*", m.group(1)):  # a macro's body (TEST_F(Suite, Name)): name it with its arguments
        args = re.match(r"\(([^()]*)\)", h[m.end() - 1 :])
        return m.group(1) + ("(" + " ".join(args.group(1).split()) + ")" if args else "")
    return m.group(1)


def long_functions(path, limit):
    with open(path, encoding="utf-8", errors="replace") as f:
        code = blank_non_code(f.read())
    found = []
    scopes = []  # 'scope' / 'data' for the open braces outside any function
    head, head_line = [], None
    line = 1
    i, n = 0, len(code)
    while i < n:
        c = code[i]
        if c == "\n":
            line += 1
        elif c == "{":
            kind = head_kind("".join(head))
            if kind == "function":
                depth, start, name = 1, head_line or line, function_name("".join(head))
                i += 1
                while i < n and depth:
                    if code[i] == "\n":
                        line += 1
                    elif code[i] == "{":
                        depth += 1
                    elif code[i] == "}":
                        depth -= 1
                    i += 1
                length = line - start + 1
                if length > limit:
                    found.append((length, path, start, name))
                head, head_line = [], None
                continue
            scopes.append(kind)
            if kind == "data":  # brace-initialised data: part of the head, skipped whole
                depth = 1
                i += 1
                while i < n and depth:
                    if code[i] == "\n":
                        line += 1
                    depth += {"{": 1, "}": -1}.get(code[i], 0)
                    i += 1
                scopes.pop()
                head.append("{}")
                continue
            head, head_line = [], None
        elif c == "}":
            if scopes:
                scopes.pop()
            head, head_line = [], None
        elif c == ";":
            head, head_line = [], None
        else:
            if head_line is None and not c.isspace():
                head_line = line
            head.append(c)
            # An access specifier ends a head: `public:` is not part of the next one.
            if c == ":" and re.search(r"\b(public|private|protected)\s*:$", "".join(head[-12:])):
                head, head_line = [], None
        i += 1
    return found


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--max", type=int, default=100, help="the longest a function may be, in lines (default 100)")
    ap.add_argument("paths", nargs="*", help="files or folders (default: the product folders)")
    args = ap.parse_args()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    paths = args.paths or [os.path.join(root, p) for p in PRODUCT]
    files = []
    for p in paths:
        if os.path.isfile(p):
            files.append(p)
        for dirpath, dirnames, filenames in os.walk(p):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
            files += [os.path.join(dirpath, f) for f in sorted(filenames) if f.endswith(SOURCE_ENDINGS)]
    found = []
    for f in files:
        found += long_functions(f, args.max)
    for length, path, start, name in sorted(found, key=lambda x: (-x[0], x[1])):
        print(f"{os.path.relpath(path)}:{start}: {name} ({length} lines)")
    print(f"{len(found)} function(s) over {args.max} lines in {len(files)} files", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
