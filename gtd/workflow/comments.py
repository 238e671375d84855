"""Where the comments are in a file of a language gtd knows, line by line (for markers.py).

gtd removes a marker only from a comment, and only when it can tell: the file's extension (or name)
must be in LANGUAGES, and the file is read from its first line, so a line inside a multi-line string or
block comment is never taken for code. Python is read by its own tokenizer. Every other language by a
small scanner that knows its comment tokens, its string quotes and the constructs it cannot follow
(heredocs, raw and long strings, regex literals): from the first one of those on, nothing is known and
nothing is touched. A line whose comment gtd cannot place is simply absent from the answer.
"""

from __future__ import annotations

import os

from gtd.record import record


@record(frozen=True)
class Language:
    line: tuple[str, ...] = ()  # line comment tokens
    block: tuple[tuple[str, str], ...] = ()  # (opener, closer)
    quotes: tuple[str, ...] = ('"', "'")  # string delimiters (triple ones first), backslash escapes
    unknown: tuple[str, ...] = ()  # in code: from here on gtd cannot tell what is a comment
    whole_line: bool = False  # a comment only as the line's first text (Dockerfile, ini: `a = b ; c` is a value)
    slash_regex: bool = False  # a lone `/` may open a regex literal (JS and kin)
    word_start: bool = False  # a line comment token counts only at a word's start (shell: `a#b`, `${#x}`)


_C = Language(line=("//",), block=(("/*", "*/"),), unknown=('R"', '@"', 'r"', 'r#"', 'br"'))
_JS = Language(line=("//",), block=(("/*", "*/"),), quotes=('"', "'", "`"), slash_regex=True)
_JVM = Language(line=("//",), block=(("/*", "*/"),), quotes=('"""', '"', "'"))
_HASH = Language(line=("#",))
_SHELL = Language(line=("#",), quotes=('"', "'", "`"), unknown=("<<", "$'"), word_start=True)
_TOML = Language(line=("#",), quotes=('"""', "'''", '"', "'"))
_YAML = Language(line=("#",), quotes=(), whole_line=True, unknown=("|", ">"))  # a block scalar's lines are text
_SQL = Language(line=("--",), block=(("/*", "*/"),), unknown=("$$", "$"))
_LUA = Language(line=("--",), unknown=("[[", "[="))
_HASKELL = Language(line=("--",), quotes=('"',), unknown=("{-",))
_LISP = Language(line=(";",), quotes=('"',), unknown=("?", "#\\", "\\"))
_MARKUP = Language(block=(("<!--", "-->"),), quotes=(), unknown=("<script", "<style", "<pre", "<textarea", "<![CDATA[", "```", "~~~"))
_CSS = Language(block=(("/*", "*/"),))

LANGUAGES: dict[str, Language] = {
    **dict.fromkeys((".c", ".h", ".cc", ".cpp", ".cxx", ".hpp", ".hh", ".cs", ".proto", ".sol",
                     ".zig", ".jsonc"), _C),
    ".go": Language(line=("//",), block=(("/*", "*/"),), quotes=('"', "'", "`")),
    ".rs": Language(line=("//",), block=(("/*", "*/"),), quotes=('"',), unknown=('r"', 'r#"', "b'", "'\"'")),
    **dict.fromkeys((".js", ".jsx", ".mjs", ".cjs", ".ts", ".tsx", ".mts", ".cts"), _JS),
    **dict.fromkeys((".java", ".kt", ".kts", ".scala", ".groovy", ".gradle", ".swift", ".dart"), _JVM),
    ".php": Language(line=("//", "#"), block=(("/*", "*/"),), unknown=("<<<",)),
    **dict.fromkeys((".sh", ".bash", ".zsh", ".ksh"), _SHELL),
    ".rb": Language(line=("#",), quotes=('"', "'", "`"), unknown=("<<", "%", "=begin", "/")),
    **dict.fromkeys((".r", ".R", ".cmake", "CMakeLists.txt"), Language(line=("#",), unknown=("#[[", "[["))),
    **dict.fromkeys((".tf", ".hcl"), Language(line=("#", "//"), block=(("/*", "*/"),), quotes=('"',), unknown=("<<",))),
    **dict.fromkeys((".ex", ".exs"), Language(line=("#",), quotes=('"""', "'''", '"', "'"), unknown=("~",))),
    ".toml": _TOML,
    **dict.fromkeys((".yaml", ".yml"), _YAML),
    **dict.fromkeys((".ini", ".cfg"), Language(line=("#", ";"), quotes=(), whole_line=True)),
    **dict.fromkeys(("Dockerfile", "Containerfile"), Language(line=("#",), quotes=(), whole_line=True, unknown=("<<",))),
    **dict.fromkeys(("Makefile", "makefile", "GNUmakefile", ".mk"), Language(line=("#",), quotes=(), whole_line=True)),
    ".sql": _SQL,
    ".lua": _LUA,
    **dict.fromkeys((".hs", ".elm"), _HASKELL),
    **dict.fromkeys((".clj", ".cljs", ".cljc", ".edn", ".el", ".lisp", ".scm"), _LISP),
    **dict.fromkeys((".css",), _CSS),
    **dict.fromkeys((".scss", ".less"), Language(line=("//",), block=(("/*", "*/"),))),
    **dict.fromkeys((".html", ".htm", ".xml", ".svg", ".md"), _MARKUP),
}
PYTHON = (".py", ".pyi")


def language_of(path: str) -> Language | str | None:
    """The language of a file by its name, "python" for Python, None when gtd does not know it."""
    name = os.path.basename(path)
    ext = os.path.splitext(name)[1]
    if ext in PYTHON:
        return "python"
    return LANGUAGES.get(name) or LANGUAGES.get(ext)


def comments(path: str, text: str) -> dict[int, tuple[int, int | None]]:
    """{line number (1-based): (column where its comment starts, column where it ends or None: the line's end)}
    for the lines of `text` whose first comment gtd can place; other lines are absent."""
    language = language_of(path)
    if language is None:
        return {}
    if language == "python":
        return _python(text)
    return _scan(text, language)


def _python(text: str) -> dict[int, tuple[int, int | None]]:
    import io
    import tokenize

    found: dict[int, tuple[int, int | None]] = {}
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.COMMENT and token.start[0] not in found:
                found[token.start[0]] = (token.start[1], None)
    except (tokenize.TokenError, SyntaxError):
        return {}  # not Python gtd can read: nothing is known
    return found


def _scan(text: str, lang: Language) -> dict[int, tuple[int, int | None]]:
    if not lang.whole_line:
        return _scan_code(text, lang)
    found: dict[int, tuple[int, int | None]] = {}
    for number, line in enumerate(text.split("\n"), 1):
        if any(u in line for u in lang.unknown):
            return found
        stripped = line.lstrip()
        if any(stripped.startswith(token) for token in lang.line):
            found[number] = (len(line) - len(stripped), None)
    return found


def _scan_code(text: str, lang: Language) -> dict[int, tuple[int, int | None]]:
    """The scanner for languages whose strings and block comments may span lines."""
    found: dict[int, tuple[int, int | None]] = {}
    closer: str | None = None  # inside a string (its quote) or block comment (its closer)
    in_block = False
    for number, line in enumerate(text.split("\n"), 1):
        i = 0
        while i < len(line):
            if closer is not None:
                if not in_block and line[i] == "\\":
                    i += 2
                    continue
                if line.startswith(closer, i):
                    if in_block and number in found and found[number][1] is None:
                        found[number] = (found[number][0], i + len(closer))
                    i += len(closer)
                    closer, in_block = None, False
                    continue
                i += 1
                continue
            if any(line.startswith(u, i) for u in lang.unknown):
                return found
            token = next((t for t in lang.line if line.startswith(t, i)), None)
            if token is not None and lang.word_start and i > 0 and not line[i - 1].isspace() and line[i - 1] != ";":
                token = None
            if token is not None:
                found.setdefault(number, (i, None))
                break  # the rest of the line is the comment
            opener = next((pair for pair in lang.block if line.startswith(pair[0], i)), None)
            if opener is not None:
                if number not in found:
                    found[number] = (i, None)  # its end is set when it closes on this line
                closer, in_block = opener[1], True
                i += len(opener[0])
                continue
            quote = next((q for q in lang.quotes if line.startswith(q, i)), None)
            if quote is not None:
                closer, in_block = quote, False
                i += len(quote)
                continue
            if lang.slash_regex and line[i] == "/" and any(c in line[i + 1:] for c in "/'\"`"):
                return found  # a regex literal or a division: gtd cannot tell which
            i += 1
        if closer is not None and in_block and number in found and found[number][1] is None:
            del found[number]  # a block comment that goes on below this line: not cut from here
    return found
