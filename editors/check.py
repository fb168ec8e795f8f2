#!/usr/bin/env python3
"""Check the weft editor support in editors/ (Python 3 standard library only, no network).

1. VS Code: package.json and language-configuration.json are valid JSON with the fields
   VS Code needs; their regexes compile. The extension starts the language server: `main`
   names extension.js, which exists, requires `vscode-languageclient/node` (a declared
   dependency) and runs the configured binary with `lsp`; it activates on `onLanguage:weft`
   and contributes the `weft.server.path` setting. Neovim: editors/nvim/lua/weft.lua starts
   `weft lsp` with the built-in client.
2. TextMate grammar: valid JSON; every `match`/`begin`/`end` regex compiles with Python's `re`
   after translating the few Oniguruma-only escapes (and rejecting the rest); every
   `#include` resolves.
3. TextMate coverage: a small TextMate engine (match rules, begin/end regions, captures,
   includes; leftmost match wins, the region's end wins ties) tokenises every .weft file
   under stdlib/ and examples/ plus editors/sample.weft. An independent reference lexer,
   written from compiler/src/syntax/weft.pest (its word lists read from editors/words.json,
   which the compiler's tests keep equal to compiler/src/words.rs), says what each token is,
   and the check asserts
   the scopes: every reserved word, builtin call, speed word and boolean gets a keyword /
   storage / support / constant scope; every contextual keyword gets a keyword scope where the
   grammar reads it as one and *no* keyword scope where it is a plain name (`switch: sb7800`,
   `hca.ports`, `let down = …`); comments, strings, escapes, placeholders, numbers,
   operators, model/template names, named arguments and parameter types get theirs.
4. Vim (skipped with a message when vim is not installed): the plain smoke test
   `vim -u NONE -es -c 'set rtp+=editors/vim' -c 'syntax on' -c 'edit examples/cluster-648.weft'
   -c 'qa!'` runs without errors; filetype detection, ftplugin and syntax load; the same
   reference expectations hold for Vim's syntax groups; with every line's indentation removed,
   `gg=G` (indent/weft.vim) restores each checked file exactly (they are in `weft fmt` layout).

Prints `N passed, 0 failed` and exits 0 on success, exits 1 otherwise.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

EDITORS = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(EDITORS)
VSCODE = os.path.join(EDITORS, "vscode")
VIM = os.path.join(EDITORS, "vim")
GRAMMAR = os.path.join(VSCODE, "syntaxes", "weft.tmLanguage.json")

# The word lists are the compiler's (compiler/src/words.rs), written to editors/words.json
# and checked there by `cargo test -p weft-compiler words`.
with open(os.path.join(EDITORS, "words.json"), encoding="utf-8") as _f:
    WORDS = json.load(_f)
RESERVED = set(WORDS["reserved"])
NODE_KINDS = set(WORDS["node_kinds"])
CONTEXTUAL = NODE_KINDS | set(WORDS["contextual"])
SPEEDS = set(WORDS["speeds"])
BUILTINS = set(WORDS["builtins"])
TYPES = set(WORDS["types"])
# Section names the editors highlight: the top-level sections plus the nested ones (`class`,
# `vms`, `vm`); not a compiler list (the elaborator knows each section where it reads it).
SECTIONS = {"vls", "routing", "qos", "tenant", "class", "vms", "vm"}

# ---------------------------------------------------------------------------------------
# Bookkeeping

passed = 0
failed = 0


def check(name, ok, details=()):
    global passed, failed
    if ok:
        passed += 1
        print(f"ok    {name}")
    else:
        failed += 1
        print(f"FAIL  {name}")
        for d in list(details)[:12]:
            print(f"        {d}")
        if len(details) > 12:
            print(f"        … and {len(details) - 12} more")


def rel(path):
    return os.path.relpath(path, ROOT)


def load_json(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f), None
    except (OSError, ValueError) as e:
        return None, str(e)


# ---------------------------------------------------------------------------------------
# 1. VS Code manifest and language configuration


def check_language_server(pkg):
    problems = []
    main = pkg.get("main")
    entry = os.path.join(VSCODE, main) if isinstance(main, str) else None
    if not entry or not os.path.isfile(entry):
        problems.append(f"`main` ({main!r}) names no file")
    if "onLanguage:weft" not in pkg.get("activationEvents", []):
        problems.append("no `onLanguage:weft` activation event")
    if "vscode-languageclient" not in pkg.get("dependencies", {}):
        problems.append("`vscode-languageclient` is not a dependency")
    props = pkg.get("contributes", {}).get("configuration", {}).get("properties", {})
    if props.get("weft.server.path", {}).get("default") != "weft":
        problems.append("no `weft.server.path` setting defaulting to `weft`")
    if entry and os.path.isfile(entry):
        with open(entry, encoding="utf-8") as f:
            js = f.read()
        for needle, why in (("require('vscode-languageclient/node')", "the client library"),
                            ("args: ['lsp']", "the server's arguments"),
                            ("'weft.server.path'".replace("'weft.", "'"), "the binary setting"),
                            ("function activate(", "an activate function"),
                            ("module.exports = { activate, deactivate }", "its exports")):
            if needle not in js:
                problems.append(f"{rel(entry)} lacks {why} (`{needle}`)")
    check("vscode extension starts `weft lsp` with vscode-languageclient", not problems, problems)
    nvim = os.path.join(EDITORS, "nvim", "lua", "weft.lua")
    problems = []
    if not os.path.isfile(nvim):
        problems.append(f"{rel(nvim)} is missing")
    else:
        with open(nvim, encoding="utf-8") as f:
            lua = f.read()
        for needle in ("vim.lsp.start_client", "'lsp'", "*.weft"):
            if needle not in lua:
                problems.append(f"{rel(nvim)} lacks `{needle}`")
    check("nvim/lua/weft.lua starts `weft lsp` with Neovim's client", not problems, problems)


def check_vscode_manifest():
    pkg, err = load_json(os.path.join(VSCODE, "package.json"))
    check("vscode/package.json is valid JSON", pkg is not None, [err] if err else [])
    if pkg is None:
        return
    problems = []
    for field in ("name", "displayName", "description", "version", "publisher", "engines"):
        if field not in pkg:
            problems.append(f"missing `{field}`")
    if pkg.get("name") != "weft":
        problems.append("`name` is not `weft`")
    if "vscode" not in pkg.get("engines", {}):
        problems.append("missing `engines.vscode`")
    contributes = pkg.get("contributes", {})
    langs = [l for l in contributes.get("languages", []) if l.get("id") == "weft"]
    if not langs:
        problems.append("no contributes.languages entry with id `weft`")
    for lang in langs:
        if ".weft" not in lang.get("extensions", []):
            problems.append("language `weft` does not claim `.weft`")
        conf = lang.get("configuration")
        if not conf or not os.path.isfile(os.path.join(VSCODE, conf)):
            problems.append(f"language configuration `{conf}` does not exist")
    grammars = [g for g in contributes.get("grammars", []) if g.get("language") == "weft"]
    if not grammars:
        problems.append("no contributes.grammars entry for language `weft`")
    for g in grammars:
        if g.get("scopeName") != "source.weft":
            problems.append("grammar scopeName is not `source.weft`")
        if not g.get("path") or not os.path.isfile(os.path.join(VSCODE, g["path"])):
            problems.append(f"grammar path `{g.get('path')}` does not exist")
    check("vscode/package.json contributes language `weft` (.weft) and grammar source.weft",
          not problems, problems)
    check_language_server(pkg)

    conf, err = load_json(os.path.join(VSCODE, "language-configuration.json"))
    check("vscode/language-configuration.json is valid JSON", conf is not None,
          [err] if err else [])
    if conf is None:
        return
    problems = []
    comments = conf.get("comments", {})
    if comments.get("lineComment") != "//":
        problems.append("comments.lineComment is not `//`")
    if comments.get("blockComment") != ["/*", "*/"]:
        problems.append("comments.blockComment is not [`/*`, `*/`]")
    pairs = {tuple(p) for p in conf.get("brackets", [])}
    for p in (("{", "}"), ("[", "]"), ("(", ")")):
        if p not in pairs:
            problems.append(f"brackets lacks {p}")
    closing = {(p.get("open"), p.get("close")) if isinstance(p, dict) else tuple(p)
               for p in conf.get("autoClosingPairs", [])}
    for p in (("{", "}"), ("[", "]"), ("(", ")"), ('"', '"')):
        if p not in closing:
            problems.append(f"autoClosingPairs lacks {p}")
    surrounding = {(p.get("open"), p.get("close")) if isinstance(p, dict) else tuple(p)
                   for p in conf.get("surroundingPairs", [])}
    for p in (("{", "}"), ("[", "]"), ("(", ")"), ('"', '"')):
        if p not in surrounding:
            problems.append(f"surroundingPairs lacks {p}")
    regexes = {
        "folding.markers.start": conf.get("folding", {}).get("markers", {}).get("start"),
        "folding.markers.end": conf.get("folding", {}).get("markers", {}).get("end"),
        "indentationRules.increaseIndentPattern":
            conf.get("indentationRules", {}).get("increaseIndentPattern"),
        "indentationRules.decreaseIndentPattern":
            conf.get("indentationRules", {}).get("decreaseIndentPattern"),
        "wordPattern": conf.get("wordPattern"),
    }
    compiled = {}
    for key, rx in regexes.items():
        if not isinstance(rx, str):
            problems.append(f"missing `{key}`")
            continue
        try:
            compiled[key] = re.compile(rx)
        except re.error as e:
            problems.append(f"`{key}` does not compile: {e}")
    for rule in conf.get("onEnterRules", []):
        for key in ("beforeText", "afterText"):
            if key in rule:
                try:
                    re.compile(rule[key])
                except re.error as e:
                    problems.append(f"onEnterRules {key} does not compile: {e}")
    check("vscode/language-configuration.json has comments, brackets, pairs, folding, "
          "indentation rules and wordPattern (regexes compile)", not problems, problems)
    if len(compiled) == len(regexes):
        behaviour = []
        inc = compiled["indentationRules.increaseIndentPattern"]
        dec = compiled["indentationRules.decreaseIndentPattern"]
        word = compiled["wordPattern"]
        for line in ("fabric f {", "    for i in 1..=4 {", "template t(a: int,"):
            if not inc.search(line):
                behaviour.append(f"increaseIndentPattern misses {line!r}")
        for line in ("    link a.p[1] <-> b.p[1]", "x = 1 // {"):
            if inc.search(line):
                behaviour.append(f"increaseIndentPattern matches {line!r}")
        for line in ("}", "    } else {", "    )"):
            if not dec.search(line):
                behaviour.append(f"decreaseIndentPattern misses {line!r}")
        for w in ("0x02c9", "4x", "cn001", "switch_to_switch", "1_000"):
            m = word.search(w)
            if not m or m.group(0) != w:
                behaviour.append(f"wordPattern does not take {w!r} whole")
        if not compiled["folding.markers.start"].search("    // region links"):
            behaviour.append("folding start marker misses `// region`")
        if not compiled["folding.markers.end"].search("    // endregion"):
            behaviour.append("folding end marker misses `// endregion`")
        check("vscode/language-configuration.json regexes behave on sample lines",
              not behaviour, behaviour)


# ---------------------------------------------------------------------------------------
# 2. TextMate grammar: regexes and includes

ONIG_ONLY = [r"\G", r"\A", r"\z", r"\Z", r"\K", r"\R", r"\X", r"\p{", r"\P{", r"\k<", r"\g<"]


def onig_to_python(rx):
    """Translate the Oniguruma regex `rx` to Python `re` syntax, or raise ValueError for
    constructs the two engines disagree on (keep the grammar to their common subset)."""
    for bad in ("(?>", "(?~", "(?i:", "(?x"):
        if bad in rx:
            raise ValueError(f"Oniguruma-only construct {bad!r}")
    out = []
    i = 0
    in_class = False
    while i < len(rx):
        c = rx[i]
        if c == "\\" and i + 1 < len(rx):
            pair = rx[i:i + 2]
            if pair in (r"\h", r"\H"):
                hexd = "0-9A-Fa-f"
                if in_class:
                    if pair == r"\H":
                        raise ValueError(r"\H inside a character class")
                    out.append(hexd)
                else:
                    out.append(f"[{hexd}]" if pair == r"\h" else f"[^{hexd}]")
            elif any(rx.startswith(b, i) for b in ONIG_ONLY):
                raise ValueError(f"Oniguruma-only escape {pair!r}")
            else:
                out.append(pair)
            i += 2
            continue
        if in_class:
            if c == "]":
                in_class = False
        elif c == "[":
            in_class = True
            out.append(c)
            i += 1
            if i < len(rx) and rx[i] == "^":
                out.append("^")
                i += 1
            if i < len(rx) and rx[i] == "]":
                out.append("\\]")
                i += 1
            continue
        elif c in "*+?}" and i + 1 < len(rx) and rx[i + 1] == "+":
            raise ValueError("possessive quantifier")
        elif rx.startswith("(?<", i) and i + 3 < len(rx) and rx[i + 3] not in "=!":
            out.append("(?P<")
            i += 3
            continue
        out.append(c)
        i += 1
    return re.compile("".join(out))


class Grammar:
    """The subset of TextMate grammars weft's uses: match, begin/end, name, contentName,
    captures/beginCaptures/endCaptures, patterns, include (#name and $self)."""

    def __init__(self, data):
        self.data = data
        self.repo = data.get("repository", {})
        self.errors = []
        self.regex_count = 0
        self._compiled = {}
        self._walk(data, "$")
        self.root = self.flatten(data.get("patterns", []))

    def _walk(self, node, where):
        if isinstance(node, dict):
            for key in ("match", "begin", "end"):
                if key in node:
                    self.regex_count += 1
                    try:
                        self._compiled[id(node), key] = onig_to_python(node[key])
                    except (ValueError, re.error) as e:
                        self.errors.append(f"{where}.{key} {node[key]!r}: {e}")
            if "begin" in node and "end" not in node:
                self.errors.append(f"{where}: begin without end")
            inc = node.get("include")
            if inc is not None and inc != "$self" and inc != "$base":
                if not inc.startswith("#") or inc[1:] not in self.repo:
                    self.errors.append(f"{where}: include {inc!r} does not resolve")
            for key, value in node.items():
                if key in ("patterns",) and isinstance(value, list):
                    for i, v in enumerate(value):
                        self._walk(v, f"{where}.patterns[{i}]")
                elif key == "repository":
                    for name, v in value.items():
                        self._walk(v, f"#{name}")
                elif key in ("captures", "beginCaptures", "endCaptures"):
                    for name, v in value.items():
                        self._walk(v, f"{where}.{key}[{name}]")

    def regex(self, rule, key):
        return self._compiled.get((id(rule), key))

    def flatten(self, patterns, seen=()):
        rules = []
        for p in patterns:
            inc = p.get("include")
            if inc is not None:
                target = self.data if inc in ("$self", "$base") else self.repo.get(inc[1:])
                if target is None or id(target) in seen:
                    continue
                if "match" in target or "begin" in target:
                    rules.append(target)
                else:
                    rules.extend(self.flatten(target.get("patterns", []), seen + (id(target),)))
            elif "match" in p or "begin" in p:
                rules.append(p)
            elif "patterns" in p:
                rules.extend(self.flatten(p["patterns"], seen))
        return rules

    def tokenize(self, text):
        """Scopes (innermost last) for every character of `text`."""
        scopes = [()] * len(text)
        base = (self.data.get("scopeName", "source"),)
        # frame: (rules, end regex, rule, scopes inside, scopes of the region itself)
        stack = [(self.root, None, None, base, base)]
        offset = 0
        for line in text.split("\n"):
            line_nl = line + "\n"
            pos = 0
            stuck = 0
            while pos <= len(line):
                rules, end_rx, region, inner, outer = stack[-1]
                best = None
                if end_rx is not None:
                    m = end_rx.search(line_nl, pos)
                    if m:
                        best = (m.start(), None, m)
                for rule in rules:
                    rx = self.regex(rule, "match" if "match" in rule else "begin")
                    if rx is None:
                        continue
                    m = rx.search(line_nl, pos)
                    if m and (best is None or m.start() < best[0]):
                        best = (m.start(), rule, m)
                        if m.start() == pos:
                            break
                if best is None:
                    break
                start, rule, m = best
                for i in range(pos, min(start, len(line))):
                    scopes[offset + i] = inner

                def paint(span_scopes, caps):
                    for i in range(m.start(), min(m.end(), len(line))):
                        scopes[offset + i] = span_scopes
                    for group, cap in (caps or {}).items():
                        g = int(group)
                        if g <= (m.re.groups) and m.start(g) >= 0 and "name" in cap:
                            for i in range(m.start(g), min(m.end(g), len(line))):
                                scopes[offset + i] = span_scopes + (cap["name"],)

                if rule is None:  # the region ends
                    paint(outer, region.get("endCaptures", region.get("captures")))
                    stack.pop()
                elif "match" in rule:
                    named = inner + ((rule["name"],) if "name" in rule else ())
                    paint(named, rule.get("captures"))
                else:
                    named = inner + ((rule["name"],) if "name" in rule else ())
                    paint(named, rule.get("beginCaptures", rule.get("captures")))
                    content = named + ((rule["contentName"],) if "contentName" in rule else ())
                    stack.append((self.flatten(rule.get("patterns", [])),
                                  self.regex(rule, "end"), rule, content, named))
                if m.end() > pos:
                    pos = m.end()
                    stuck = 0
                else:
                    stuck += 1
                    if stuck > 8:  # zero-width loop: give up on this character
                        if pos < len(line):
                            scopes[offset + pos] = stack[-1][3]
                        pos += 1
                        stuck = 0
            else:
                pos = len(line)
            for i in range(pos, len(line)):
                scopes[offset + i] = stack[-1][3]
            offset += len(line) + 1
        return scopes


# ---------------------------------------------------------------------------------------
# 3. Reference lexer: what each token of a weft file is, from weft.pest


class Tok:
    __slots__ = ("kind", "text", "start", "end", "line")

    def __init__(self, kind, text, start, end, line):
        self.kind, self.text, self.start, self.end, self.line = kind, text, start, end, line

    def __repr__(self):
        return f"{self.kind}:{self.text!r}"


OPERATORS = ["<->", "..=", "..", "||", "&&", "==", "!=", "<=", ">=", "::", "<", ">", "!",
             "+", "-", "*", "/", "%", "=", ":", ",", ";", "(", ")", "[", "]", "{", "}", "."]
IDENT_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def lex(text):
    """Tokens of `text` (code only) and a list of (start, end, expected kind) spans for
    comments and string parts."""
    toks, spans = [], []
    i, line, n = 0, 1, len(text)
    while i < n:
        c = text[i]
        if c == "\n":
            line += 1
            i += 1
        elif c in " \t\r\ufeff":
            i += 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            spans.append((i, j, "comment"))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            spans.append((i, j, "comment"))
            line += text.count("\n", i, j)
            i = j
        elif c == '"':
            j = i + 1
            while j < n and text[j] not in '"\n':
                if text[j] == "\\" and j + 1 < n:
                    kind = "escape" if text[j + 1] in '"\\nt{}' else "string"
                    spans.append((j, j + 2, kind))
                    j += 2
                elif text[j] == "{":
                    k = j + 1
                    while k < n and text[k] not in '{}"\\\n':
                        k += 1
                    if k < n and text[k] == "}":
                        spans.append((j, k + 1, "placeholder"))
                        j = k + 1
                    else:
                        spans.append((j, j + 1, "string"))
                        j += 1
                else:
                    spans.append((j, j + 1, "string"))
                    j += 1
            j = min(j + 1, n) if j < n and text[j] == '"' else j
            spans.append((i, i + 1, "string"))
            if j > i + 1 and text[j - 1] == '"':
                spans.append((j - 1, j, "string"))
            toks.append(Tok("string", text[i:j], i, j, line))
            i = j
        elif c.isdigit():
            m = (re.compile(r"0x[0-9A-Fa-f][0-9A-Fa-f_]*(?![A-Za-z0-9_])").match(text, i)
                 or re.compile(r"[0-9]+x(?![A-Za-z0-9_])").match(text, i)
                 or re.compile(r"[0-9][0-9_]*").match(text, i))
            kind = ("hex" if m.group(0).startswith("0x") else
                    "width" if m.group(0).endswith("x") else "decimal")
            toks.append(Tok(kind, m.group(0), i, m.end(), line))
            i = m.end()
        elif c.isalpha() or c == "_":
            m = IDENT_RE.match(text, i)
            toks.append(Tok("ident", m.group(0), i, m.end(), line))
            i = m.end()
        else:
            for op in OPERATORS:
                if text.startswith(op, i):
                    toks.append(Tok("op", op, i, i + len(op), line))
                    i += len(op)
                    break
            else:
                toks.append(Tok("other", c, i, i + 1, line))
                i += 1
    merged = []
    for span in sorted(spans):
        if merged and merged[-1][2] == span[2] == "string" and merged[-1][1] == span[0]:
            merged[-1] = (merged[-1][0], span[1], "string")
        else:
            merged.append(span)
    return toks, merged


CONTINUES = {"<->", "..=", "..", "||", "&&", "==", "!=", "<=", ">=", "<", ">", "!", "+", "-",
             "*", "/", "%", "=", ":", "::", ",", "(", "[", "."}


def expectations(text):
    """(start, end, kind, token text) for every token whose scope the grammars must get."""
    toks, spans = lex(text)
    exp = [(s, e, k, text[s:e]) for s, e, k in spans]
    brackets = []          # (bracket, kind): kind is "call", "params", "group" or "block"
    stmt_first = None      # first token of the current statement
    stmt_len = 0
    pending_call = False   # the next `(` opens a call's arguments
    param_list = False     # the next `(` opens a template's parameters

    def at(i):
        return toks[i] if 0 <= i < len(toks) else None

    for i, t in enumerate(toks):
        prev, nxt = at(i - 1), at(i + 1)
        inner = brackets[-1][1] if brackets else "block"
        # Statement boundaries (only in blocks: between `{ }` or at the top level).
        if inner == "block" and (
                prev is None or prev.text in ("{", "}", ";", ",")
                or (prev.line < t.line and prev.text not in CONTINUES and t.text != "else"
                    and t.text not in CONTINUES)):
            stmt_first, stmt_len = t, 0
        stmt_len += 1

        if t.kind in ("hex", "width", "decimal"):
            exp.append((t.start, t.end, t.kind, t.text))
        elif t.kind == "op":
            if t.text in ("(", "[", "{"):
                kind = ("params" if t.text == "(" and param_list else
                        "call" if t.text == "(" and pending_call else
                        "block" if t.text == "{" else "group")
                brackets.append((t.text, kind))
            elif t.text in (")", "]", "}"):
                if brackets:
                    brackets.pop()
            elif t.text not in (":", "::", ",", ";", "."):
                exp.append((t.start, t.end, "operator", t.text))
            pending_call = param_list = False
        elif t.kind == "ident":
            w = t.text
            follows_colon = prev is not None and prev.text == ":"
            named_arg = (inner in ("call", "params") and nxt is not None and nxt.text == ":")
            stmt_start = stmt_first is t
            calls = nxt is not None and nxt.text == "("
            if named_arg:
                kind = "param"
            elif inner == "params" and follows_colon and w in TYPES:
                kind = "param-type"
            elif inner == "params" and prev is not None and prev.text in ("(", ","):
                kind = "param"
            elif w in ("true", "false"):
                kind = "constant"
            elif w in RESERVED:
                kind = "keyword"
            elif w in NODE_KINDS:
                model_header = (follows_colon and at(i - 3) is not None
                                and at(i - 3).text == "model")
                kind = ("keyword" if (stmt_start and nxt is not None
                                      and (nxt.kind in ("ident", "string") or nxt.text == "("))
                        or model_header else "plain")
            elif w == "link":
                kind = "keyword" if stmt_start else "plain"
            elif w == "topology":
                kind = ("keyword" if stmt_start and nxt is not None and nxt.text in ("=", "{")
                        else "plain")
            elif w == "faults":
                kind = "keyword" if stmt_start and nxt is not None and nxt.text == "{" else "plain"
            elif w == "down":
                ends = (nxt is None or nxt.text in (";", "}") or nxt.line > t.line
                        or (nxt.text == "," and inner == "block"))
                kind = ("keyword" if ends and stmt_first is not None
                        and stmt_first.text in NODE_KINDS | {"link"} else "plain")
            elif w == "on":
                before = toks[toks.index(stmt_first):i] if stmt_first is not None else []
                kind = ("keyword" if before and before[0].kind == "ident"
                        and before[0].text not in RESERVED
                        and all(b.kind == "ident" or b.text in (".", "-") for b in before)
                        else "plain")
            elif w in SECTIONS and stmt_start:
                j = i + 1
                if at(j) is not None and at(j).kind == "ident" and at(j).text != "on":
                    j += 1
                    while (at(j) is not None and at(j).text in (".", "-")
                           and at(j + 1) is not None and at(j + 1).kind == "ident"):
                        j += 2
                kind = ("keyword" if at(j) is not None and at(j).text in ("{", "on")
                        else "plain")
            elif w in SECTIONS:
                kind = "plain"
            elif w in BUILTINS and calls and not (prev is not None and prev.text == "."):
                kind = "builtin"
            elif w in SPEEDS:
                kind = "constant"
            elif prev is not None and prev.text == "template":
                kind = "function"
            elif prev is not None and prev.text in ("model", "fabric"):
                kind = "type-name"
            elif calls and not (prev is not None and prev.text == "."):
                kind = "function"
            else:
                kind = None
            if kind is not None:
                exp.append((t.start, t.end, kind, w))
            pending_call = calls and not (w in NODE_KINDS and stmt_start) and w not in RESERVED
            param_list = calls and prev is not None and prev.text == "template"
        else:
            pending_call = param_list = False
    return exp


def line_col(text, offset):
    line = text.count("\n", 0, offset) + 1
    return f"{line}:{offset - (text.rfind(chr(10), 0, offset) + 1) + 1}"


# TextMate: what each expected kind accepts, judged on the innermost scope (or any scope for
# comments and strings, which contain TODO / escape / placeholder scopes).
def keywordish(s):
    return (s.startswith("keyword.") and not s.startswith("keyword.operator")) or \
        s.startswith("storage.type")


TM_KINDS = {
    "keyword": lambda inner, all_: keywordish(inner),
    "plain": lambda inner, all_: not keywordish(inner),
    "constant": lambda inner, all_: inner.startswith("constant.language"),
    "builtin": lambda inner, all_: inner.startswith("support.function"),
    "function": lambda inner, all_: inner.startswith("entity.name.function"),
    "type-name": lambda inner, all_: inner.startswith("entity.name.type"),
    "param": lambda inner, all_: inner.startswith("variable.parameter"),
    "param-type": lambda inner, all_: inner.startswith(("support.type", "storage.type",
                                                         "entity.name.type")),
    "comment": lambda inner, all_: any(s.startswith("comment.") for s in all_),
    "string": lambda inner, all_: any(s.startswith("string.") for s in all_),
    "escape": lambda inner, all_: inner.startswith("constant.character.escape"),
    "placeholder": lambda inner, all_: inner.startswith("constant.other.placeholder"),
    "hex": lambda inner, all_: inner.startswith("constant.numeric.hex"),
    "width": lambda inner, all_: inner.startswith("constant.numeric.width"),
    "decimal": lambda inner, all_: inner.startswith("constant.numeric.decimal"),
    "operator": lambda inner, all_: inner.startswith("keyword.operator"),
}

VIM_GROUPS = {
    "keyword": {"weftConditional", "weftRepeat", "weftAssert", "weftInclude", "weftLet",
                "weftKeyword", "weftSection", "weftStorage", "weftNodeKind"},
    "constant": {"weftBoolean", "weftSpeed"},
    "builtin": {"weftBuiltin"},
    "function": {"weftTemplateName", "weftFunction"},
    "type-name": {"weftModelName", "weftFabricName"},
    "param": {"weftNamedArg"},
    "param-type": {"weftParamType"},
    "comment": {"weftLineComment", "weftBlockComment", "weftTodo"},
    "string": {"weftString", "weftEscape", "weftEscapeError", "weftPlaceholder"},
    "escape": {"weftEscape"},
    "placeholder": {"weftPlaceholder"},
    "hex": {"weftHex"},
    "width": {"weftWidth"},
    "decimal": {"weftNumber"},
    "operator": {"weftOperator"},
}


def vim_accepts(kind, group):
    if kind == "plain":
        return group not in VIM_GROUPS["keyword"]
    return group in VIM_GROUPS[kind]


def summarise(exp):
    counts = {}
    for _, _, kind, _ in exp:
        counts[kind] = counts.get(kind, 0) + 1
    return ", ".join(f"{counts[k]} {k}" for k in sorted(counts))


def check_coverage(engine, path, text, exp, scopes_of):
    """Assert every expectation for one file; `scopes_of(offset)` -> (ok-test input)."""
    bad = []
    for s, e, kind, word in exp:
        for off in range(s, e):
            if text[off].isspace():
                continue
            verdict, shown = scopes_of(kind, off)
            if not verdict:
                bad.append(f"{rel(path)}:{line_col(text, off)} {word!r} should be {kind}, "
                           f"got {shown}")
                break
    check(f"{engine}: {rel(path)}: {summarise(exp)}", not bad, bad)


def weft_files():
    files = []
    for d in ("stdlib", "examples"):
        full = os.path.join(ROOT, d)
        for dirpath, _, names in os.walk(full):
            files += [os.path.join(dirpath, n) for n in sorted(names) if n.endswith(".weft")]
    sample = os.path.join(EDITORS, "sample.weft")
    if os.path.isfile(sample):
        files.append(sample)
    return files


def check_textmate(files):
    data, err = load_json(GRAMMAR)
    check("vscode/syntaxes/weft.tmLanguage.json is valid JSON", data is not None,
          [err] if err else [])
    if data is None:
        return
    check("tmLanguage scopeName is source.weft", data.get("scopeName") == "source.weft")
    grammar = Grammar(data)
    check(f"tmLanguage: all {grammar.regex_count} match/begin/end regexes compile "
          "(Oniguruma → Python) and all includes resolve", not grammar.errors, grammar.errors)
    if grammar.errors:
        return
    # Every scope name the brief asks for is used somewhere in the grammar.
    blob = json.dumps(data)
    wanted = ["comment.line.double-slash", "comment.block", "keyword.control", "keyword.other",
              "storage.type", "entity.name.type", "entity.name.function", "variable.parameter",
              "constant.numeric.decimal", "constant.numeric.hex", "constant.numeric.width",
              "constant.language", "string.quoted.double", "constant.character.escape",
              "constant.other.placeholder", "keyword.operator", "support.function"]
    missing = [w for w in wanted if f'"{w}' not in blob and f'{w}.' not in blob]
    check("tmLanguage uses the conventional scope names", not missing,
          [f"no scope {w}" for w in missing])
    for path in files:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        scopes = grammar.tokenize(text)
        exp = expectations(text)

        def scopes_of(kind, off, scopes=scopes):
            all_ = scopes[off]
            inner = all_[-1] if all_ else ""
            return TM_KINDS[kind](inner, all_), inner or "(no scope)"

        check_coverage("textmate", path, text, exp, scopes_of)


# ---------------------------------------------------------------------------------------
# 4. Vim

VIM_DUMP = r"""
set nocompatible
set rtp^=%(rtp)s
filetype plugin indent on
syntax on
let s:out = {}
for s:f in %(files)s
  execute 'edit ' . fnameescape(s:f)
  let s:r = {'ft': &filetype, 'syntax': get(b:, 'current_syntax', ''),
        \ 'cms': &commentstring, 'sw': &shiftwidth, 'et': &expandtab,
        \ 'indentexpr': &indentexpr, 'groups': [], 'indented': []}
  for s:l in range(1, line('$'))
    let s:row = []
    for s:c in range(1, len(getline(s:l)))
      call add(s:row, synIDattr(synID(s:l, s:c, 1), 'name'))
    endfor
    call add(s:r.groups, s:row)
  endfor
  " Remove all indentation (except inside block comments, which `=` leaves alone), then
  " re-indent the whole file.
  for s:l in range(1, line('$'))
    let s:col = match(getline(s:l), '\S') + 1
    if s:col > 0 && (synIDattr(synID(s:l, s:col, 0), 'name') !~? 'blockcomment'
          \ || getline(s:l) =~ '^\s*/\*')
      call setline(s:l, substitute(getline(s:l), '^\s\+', '', ''))
    endif
  endfor
  silent normal! gg=G
  let s:r.indented = getline(1, '$')
  let s:r.errmsg = v:errmsg
  let s:out[s:f] = s:r
  bwipeout!
endfor
call writefile([json_encode(s:out)], %(out)s)
qa!
"""


def vim_string(s):
    return "'" + s.replace("'", "''") + "'"


def check_vim(files):
    vim = shutil.which("vim")
    if vim is None:
        print("skip  vim is not installed: Vim checks skipped "
              "(apt-get install -y vim to run them)")
        return
    # The plain smoke test, exactly as documented.
    cmd = [vim, "-u", "NONE", "-es", "-c", "set rtp+=editors/vim", "-c", "syntax on",
           "-c", "edit examples/cluster-648.weft", "-c", "qa!"]
    try:
        p = subprocess.run(cmd, cwd=ROOT, stdin=subprocess.DEVNULL, capture_output=True,
                           text=True, timeout=60)
        out = (p.stdout + p.stderr).strip()
        check("vim: `vim -u NONE -es … syntax on … edit examples/cluster-648.weft` runs "
              "without errors", p.returncode == 0 and not re.search(r"\bE\d+:", out),
              [f"exit {p.returncode}"] + out.splitlines())
    except subprocess.TimeoutExpired:
        check("vim: smoke test finishes", False, ["timed out"])
        return

    with tempfile.TemporaryDirectory() as tmp:
        script = os.path.join(tmp, "dump.vim")
        out_path = os.path.join(tmp, "dump.json")
        with open(script, "w", encoding="utf-8") as f:
            f.write(VIM_DUMP % {
                "rtp": VIM.replace(" ", r"\ ").replace(",", r"\,"),
                "files": "[" + ", ".join(vim_string(x) for x in files) + "]",
                "out": vim_string(out_path),
            })
        try:
            p = subprocess.run([vim, "-u", "NONE", "-i", "NONE", "-N", "-es", "-S", script],
                               cwd=ROOT, stdin=subprocess.DEVNULL, capture_output=True,
                               text=True, timeout=300)
        except subprocess.TimeoutExpired:
            check("vim: highlighting dump finishes", False, ["timed out"])
            return
        msgs = (p.stdout + p.stderr).strip()
        ok = p.returncode == 0 and os.path.isfile(out_path)
        check("vim: loads ftdetect, ftplugin, indent and syntax for every file without errors",
              ok and not re.search(r"\bE\d+:", msgs), [f"exit {p.returncode}"] + msgs.splitlines())
        if not ok:
            return
        with open(out_path, encoding="utf-8") as f:
            dump = json.load(f)

    for path in files:
        r = dump.get(path)
        if r is None:
            check(f"vim: {rel(path)} was dumped", False)
            continue
        problems = []
        if r["ft"] != "weft":
            problems.append(f"filetype is {r['ft']!r}")
        if r["syntax"] != "weft":
            problems.append(f"b:current_syntax is {r['syntax']!r}")
        if r["cms"] != "// %s":
            problems.append(f"commentstring is {r['cms']!r}")
        if r["sw"] != 4 or not r["et"]:
            problems.append(f"shiftwidth={r['sw']} expandtab={r['et']}")
        if "GetWeftIndent" not in r["indentexpr"]:
            problems.append(f"indentexpr is {r['indentexpr']!r}")
        if r.get("errmsg"):
            problems.append(f"v:errmsg {r['errmsg']!r}")
        check(f"vim: {rel(path)}: filetype weft, syntax weft, commentstring `// %s`, "
              "4-space indent", not problems, problems)

        with open(path, encoding="utf-8") as f:
            text = f.read()
        lines = text.split("\n")
        # character offset -> (line index, byte column)
        pos = []
        for li, line in enumerate(lines):
            b = 0
            for ch in line:
                pos.append((li, b))
                b += len(ch.encode("utf-8"))
            pos.append((li, b))  # the newline

        def scopes_of(kind, off, pos=pos, groups=r["groups"]):
            li, b = pos[off]
            row = groups[li] if li < len(groups) else []
            g = row[b] if b < len(row) else ""
            return vim_accepts(kind, g), g or "(no group)"

        check_coverage("vim", path, text, expectations(text), scopes_of)

        want = text.split("\n")
        if want and want[-1] == "":
            want = want[:-1]
        got = r["indented"]
        diffs = [f"{rel(path)}:{i + 1}: want {w!r}, vim gives {g!r}"
                 for i, (w, g) in enumerate(zip(want, got)) if w != g]
        if len(want) != len(got):
            diffs.append(f"{len(want)} lines, vim gives {len(got)}")
        check(f"vim: {rel(path)}: flush-left then gg=G restores all {len(want)} lines' "
              "indentation", not diffs,
              diffs)


def main():
    files = weft_files()
    check(f"found {len(files)} .weft files to check", len(files) >= 3,
          ["expected stdlib/*.weft, examples/*.weft and editors/sample.weft"])
    check_vscode_manifest()
    check_textmate(files)
    check_vim(files)
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
