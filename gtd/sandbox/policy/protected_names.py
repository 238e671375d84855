"""The protected names: one maintained table, each entry naming the host tool that reads the names and
what it runs from them (docs/protected-paths.md is this table in prose).

Below level `full` every name here is read-only where it exists and quarantined when the agent creates
it (protected.py, placeholders.py, gitguard.py). `where` says where the names are looked for:
- REPO: at the workspace's root and every nested repository's work-tree root;
- ANY_DIR: in every directory of the work tree (an agent CLI started in a subdirectory trusts them);
- HOME: relative to HOME (matters where a config layer or provider makes part of HOME writable).

The names are each tool's documented file names and locations; a name a tool reads only under a
variable part (mise's `mise.<env>.toml`, VS Code's `*.code-workspace`) cannot be listed here and is
named as a residual risk in docs/protected-paths.md.
"""

from __future__ import annotations

from gtd.config.original import PROJECT_FILES as ORIGINAL_PROJECT_FILES, SCRIPT_FILES as ORIGINAL_SCRIPT_FILES
from gtd.record import record

REPO, ANY_DIR, HOME = "repo", "any directory", "home"


@record(frozen=True)
class ProtectedName:
    tool: str  # the host tool that reads these names
    runs: str  # what it runs (or trusts) from them
    names: tuple[str, ...]  # relative to where they are looked for
    where: str = REPO


def _each(stems: tuple[str, ...], exts: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(f"{stem}.{ext}" for stem in stems for ext in exts)


SHELL_RC_NAMES = (".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".zshrc", ".zprofile", ".zshenv",
                  ".zlogin", ".profile")
_LEFTHOOK_STEMS = ("lefthook", ".lefthook", "lefthook-local", ".lefthook-local", ".config/lefthook")
_JS = ("js", "cjs", "mjs")
_TS = ("ts", "cts", "mts")

TABLE: tuple[ProtectedName, ...] = (
    # -- in the repository ----------------------------------------------------------------------
    ProtectedName("git", "`git submodule update` clones and checks out what it names", (".gitmodules",)),
    ProtectedName("the host's shell (a workspace that is, or is sourced like, a home)", "start-up commands",
                  SHELL_RC_NAMES),
    ProtectedName("git (include.path to it)", "config: core.fsmonitor, aliases, filters", (".gitconfig",)),
    ProtectedName("ripgrep (RIPGREP_CONFIG_PATH)", "--pre preprocessor commands", (".ripgreprc",)),
    ProtectedName("direnv", "runs .envrc as shell on `cd`", (".envrc",)),
    ProtectedName("zsh-autoenv", "runs these as zsh on entering/leaving the directory",
                  (".autoenv.zsh", ".autoenv_leave.zsh")),
    ProtectedName("vim / neovim ('exrc'), localvimrc", "sourced from the directory the editor starts in",
                  (".exrc", ".vimrc", ".nvimrc", ".nvim.lua", ".lvimrc")),
    ProtectedName("VS Code", "tasks (runOn: folderOpen), settings naming programs, extensions' config", (".vscode",)),
    ProtectedName("JetBrains IDEs", "run configurations, startup tasks, external tools", (".idea",)),
    ProtectedName("Zed", "tasks and settings naming language servers", (".zed",)),
    ProtectedName("Dev Containers (VS Code, devcontainer CLI)", "initializeCommand runs on the host",
                  (".devcontainer", ".devcontainer.json")),
    ProtectedName("gtd", "its own project config (approvals, levels, provider)", (".gtdrc.json",)),
    ProtectedName("the original gtd", "its project config; a script config is executed",
                  (*ORIGINAL_PROJECT_FILES, *ORIGINAL_SCRIPT_FILES)),
    # hook managers: the hook the host's next commit runs executes what they name
    ProtectedName("husky", "the git hooks it installs", (".husky",)),
    ProtectedName("git (core.hooksPath, when configured)", "hooks", (".githooks", ".git-hooks")),
    ProtectedName("lefthook", "commands of every hook",
                  (*_each(_LEFTHOOK_STEMS, ("yml", "yaml", "json", "jsonc", "toml")), ".lefthook", ".lefthook-local")),
    ProtectedName("pre-commit", "hook entries (any command)",
                  (".pre-commit-config.yaml", ".pre-commit-config.yml", ".pre-commit-hooks.yaml")),
    ProtectedName("simple-git-hooks", "hook commands", _each((".simple-git-hooks", "simple-git-hooks"), (*_JS, "json"))),
    ProtectedName("overcommit", "hook commands", (".overcommit.yml",)),
    ProtectedName("lint-staged (run by a hook)", "commands per staged file; JS/TS configs are executed",
                  (".lintstagedrc", *_each((".lintstagedrc",), ("json", "yaml", "yml", *_JS, *_TS)),
                   *_each(("lint-staged.config",), (*_JS, *_TS)))),
    ProtectedName("commitlint (run by a hook)", "JS/TS configs are executed",
                  (".commitlintrc", *_each((".commitlintrc",), ("json", "yaml", "yml", *_JS, *_TS)),
                   *_each(("commitlint.config",), (*_JS, *_TS)))),
    ProtectedName("mise", "[hooks], [env] and tasks of a trusted config on `cd`; tool versions (`path:` ones run)",
                  ("mise.toml", ".mise.toml", "mise.local.toml", ".mise.local.toml", ".mise", ".config/mise",
                   ".config/mise.toml", ".config/mise.local.toml", "mise/config.toml", "mise/config.local.toml",
                   ".rtx.toml", ".rtx.local.toml")),  # mise's LOCAL_CONFIG_FILENAMES (src/config/mod.rs)
    ProtectedName("mise, asdf", "tool versions: `path:` versions are run from where they point", (".tool-versions",)),
    # agent CLIs, in every directory of the work tree
    ProtectedName("Claude Code", "settings (hooks, permissions), MCP servers", (".claude", ".mcp.json", "CLAUDE.local.md"),
                  ANY_DIR),
    ProtectedName("opencode", "config (commands, MCP servers, plugins); read up to the repository's root",
                  ("opencode.json", "opencode.jsonc", ".opencode"), ANY_DIR),
    ProtectedName("pi", "settings, extensions, hooks", (".pi",), ANY_DIR),
    ProtectedName("Codex CLI", "config (MCP servers, sandbox); AGENTS.override.md replaces AGENTS.md",
                  (".codex", "AGENTS.override.md"), ANY_DIR),
    ProtectedName("Gemini CLI", "settings (MCP servers, tool commands, hooks)", (".gemini",), ANY_DIR),
    ProtectedName("Qwen Code", "settings (MCP servers, tool commands)", (".qwen",), ANY_DIR),
    ProtectedName("Cursor", "hooks, MCP servers", (".cursor",), ANY_DIR),
    ProtectedName("aider", "lint and test commands, model settings",
                  (".aider.conf.yml", ".aider.model.settings.yml", ".aider.model.metadata.json"), ANY_DIR),
    ProtectedName("Crush", "crushrc is run as bash at start; JSON config (LSP and MCP commands); skills",
                  (".crushrc", "crushrc", ".crush.json", "crush.json", ".crush"), ANY_DIR),
    ProtectedName("Kilo Code", "MCP servers, rules, workflows", (".kilocode",), ANY_DIR),
    ProtectedName("Cline", "rules and hooks", (".clinerules",), ANY_DIR),
    ProtectedName("Continue, Windsurf, Amazon Q, Kiro, Roo Code, Junie, goose",
                  "MCP servers, hooks, workflows, rules",
                  (".continue", ".windsurf", ".amazonq", ".kiro", ".roo", ".junie", ".goose"), ANY_DIR),
    # -- in HOME --------------------------------------------------------------------------------
    ProtectedName("the host's shells", "start-up files, completions, plugin managers, prompts",
                  (*SHELL_RC_NAMES, ".inputrc", ".bash_completion", ".bash_completion.d", ".local/share/bash-completion",
                   ".config/bash_completion", ".bash_aliases", ".bashrc.d", ".profile.d", ".zshrc.d", ".config/zsh",
                   ".oh-my-zsh", ".zprezto", ".zinit", ".local/share/zinit", ".zplug", ".antigen", ".bash_it", ".p10k.zsh",
                   ".config/starship.toml", ".config/fish", ".config/nushell", ".config/powershell", ".xonshrc",
                   ".config/direnv", ".direnvrc", ".pam_environment", ".config/environment.d"), HOME),
    ProtectedName("the host's PATH", "programs run by name", ("bin", ".bin", ".local/bin", ".cargo/bin", "go/bin",
                  ".deno/bin", ".bun/bin", ".local/share/pnpm", ".yarn/bin", ".volta/bin", ".pixi/bin", ".nix-profile"),
                  HOME),
    ProtectedName("version managers", "shims and init scripts the shell puts first on PATH",
                  (".pyenv/shims", ".pyenv/bin", ".pyenv/libexec", ".pyenv/plugins", ".pyenv/version", ".rbenv/shims",
                   ".rbenv/bin", ".rbenv/plugins", ".nodenv/shims", ".goenv/shims", ".jenv", ".nvm/nvm.sh",
                   ".nvm/bash_completion", ".nvm/alias", ".asdf/shims", ".asdf/bin", ".asdf/lib", ".asdf/plugins",
                   ".asdf/asdf.sh", ".tool-versions", ".asdfrc", ".local/share/mise", ".config/mise", ".config/mise.toml",
                   ".mise.toml", "mise.toml", ".mise", ".sdkman/bin", ".sdkman/etc", ".cargo/env",
                   ".rustup/settings.toml", ".rye/shims"), HOME),
    ProtectedName("git", "global config, templates (hooks copied into every new clone), a dotfiles repository",
                  (".gitconfig", ".config/git", ".git-templates", ".git_template", ".git"), HOME),
    ProtectedName("ssh", "config (ProxyCommand, LocalCommand), authorized keys", (".ssh",), HOME),
    ProtectedName("editors and terminals", "init files, plugins, tasks",
                  (".vimrc", ".vim", ".config/vim", ".config/nvim", ".local/share/nvim", ".emacs", ".emacs.el",
                   ".emacs.d", ".config/emacs", ".doom.d", ".config/doom", ".config/helix", ".config/zed",
                   ".config/Code/User", ".vscode", ".vscode-server", ".cursor", ".nanorc", ".tmux.conf", ".tmux",
                   ".config/tmux", ".screenrc"), HOME),
    ProtectedName("agent CLIs", "user settings, hooks, MCP servers, instructions for every later session",
                  (".claude.json", ".claude/settings.json", ".claude/settings.local.json", ".claude/hooks",
                   ".claude/plugins", ".claude/commands", ".claude/agents", ".claude/skills", ".claude/output-styles",
                   ".claude/CLAUDE.md", ".config/opencode", ".pi/agent/settings.json", ".pi/agent/models.json",
                   ".pi/agent/extensions", ".pi/agent/hooks", ".pi/agent/AGENTS.md", ".codex", ".gemini", ".qwen",
                   ".aider.conf.yml", ".continue", ".codeium", ".kiro", ".config/goose", ".config/crush",
                   ".local/share/crush"), HOME),
    ProtectedName("package managers and language tools", "commands, hooks, index URLs, start-up code",
                  (".npmrc", ".yarnrc", ".yarnrc.yml", ".bunfig.toml", ".gemrc", ".bundle/config", ".condarc",
                   ".config/pip", ".pip", ".config/uv", ".pydistutils.cfg", ".local/lib", ".ipython", ".jupyter",
                   ".cargo/config", ".cargo/config.toml", ".gradle/init.d", ".gradle/init.gradle",
                   ".gradle/init.gradle.kts", ".sbt", ".curlrc", ".wgetrc", ".gdbinit", ".config/gdb", ".lldbinit",
                   ".irbrc", ".pryrc", ".Rprofile", ".psqlrc"), HOME),
    ProtectedName("the desktop session", "services, autostart entries, session scripts",
                  (".config/systemd", ".local/share/systemd", ".config/autostart", ".local/share/applications",
                   ".xprofile", ".xsession", ".xsessionrc", ".xinitrc", ".config/i3", ".config/sway", ".config/hypr",
                   ".config/plasma-workspace/env"), HOME),
)


def names(*where: str, tool: str | None = None) -> tuple[str, ...]:
    """The table's names looked for `where` (of the entries for `tool`, when given), each once, in order."""
    found = (n for e in TABLE if e.where in where and (tool is None or e.tool == tool) for n in e.names)
    return tuple(dict.fromkeys(found))


HOOK_MANAGERS = ("husky", "git (core.hooksPath, when configured)", "lefthook", "pre-commit", "simple-git-hooks",
                 "overcommit", "lint-staged (run by a hook)", "commitlint (run by a hook)")
