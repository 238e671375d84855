"""Built-in default lists, plain Python: the sandbox reads them on its fast path without pydantic."""

from __future__ import annotations

# Secrets in HOME that no level below `full` may read. Lists combine by union across
# layers, so no config layer can remove one of these.
DEFAULT_DENY_READ = [
    "~/.ssh",
    "~/.aws",
    "~/.gnupg",
    "~/.config/gh",
    "~/.config/gcloud",
    "~/.azure",
    "~/.kube",
    "~/.docker",
    "~/.netrc",
    "~/.npmrc",
    "~/.pypirc",
    "~/.git-credentials",
    "~/.config/git/credentials",
    "~/.cargo/credentials",
    "~/.cargo/credentials.toml",
    "~/.password-store",
    "~/.terraform.d",
    "~/.vault-token",
]

# ssh, http, https: below 1024, so no unprivileged server inside the sandbox ever needs them.
DEFAULT_INTERCEPT_PORTS = [22, 80, 443]

DEFAULT_NETWORK_DOMAINS = [
    "pypi.org:443",
    "files.pythonhosted.org:443",
    "registry.npmjs.org:443",
    "registry.yarnpkg.com:443",
    "crates.io:443",
    "static.crates.io:443",
    "index.crates.io:443",
    "proxy.golang.org:443",
    "sum.golang.org:443",
    # Java: Maven Central, the Gradle plugin portal and Gradle distributions (the wrapper's download).
    "repo.maven.apache.org:443",
    "repo1.maven.org:443",
    "plugins.gradle.org:443",
    "services.gradle.org:443",
    "downloads.gradle.org:443",
]
