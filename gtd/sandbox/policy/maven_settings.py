"""The ~/.m2/settings.xml the sandbox sees: a new document written by gtd from the person's (issue 23).

A settings.xml holds server passwords, private keys, passphrases, `<httpHeaders>` such as GitLab's
`Private-Token`, proxy passwords and profile properties (`sonar.login`, `gpg.passphrase`). Removing those
by name always misses the next one, so nothing is removed: gtd builds a fresh `<settings>` from an
allow-list of elements, each a plain text value:

- `localRepository`, `offline`, `interactiveMode`, `pluginGroups`, `activeProfiles`;
- mirrors (id, name, url, mirrorOf, layout, mirrorOfLayouts, blocked);
- profiles' id, `activation/activeByDefault`, and their repositories and plugin repositories (id, name,
  url, layout, releases/snapshots policies): no properties;
- a `<server>` only when it belongs to a mirror or repository whose host the person opted in with
  `sandbox.registryCredentials`: then as it is (its id, username, password and headers).

Proxies are never written: inside the sandbox every connection goes through gtd's proxy.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Iterable

NAMESPACE = "http://maven.apache.org/SETTINGS/1.0.0"
TOP_TEXT = ("localRepository", "offline", "interactiveMode", "usePluginRegistry")
MIRROR = ("id", "name", "url", "mirrorOf", "layout", "mirrorOfLayouts", "blocked")
REPOSITORY = ("id", "name", "url", "layout")
POLICY = ("enabled", "updatePolicy", "checksumPolicy")
REPOSITORY_KINDS = (("repositories", "repository"), ("pluginRepositories", "pluginRepository"))


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def _children(element, name: str) -> list:
    return [c for c in element if _local(c.tag) == name]


def _plain(element) -> str | None:
    """`element`'s text when it is one plain line (None when empty, nested or multi-line)."""
    text = (element.text or "").strip()
    if len(element) or not text or "\n" in text or "\r" in text:
        return None
    return text


def _text(element, name: str) -> str | None:
    """The plain text of `element`'s first child `name`."""
    found = _children(element, name)
    return _plain(found[0]) if found else None


def maven_settings(text: str, hosts: Iterable[str] = ()) -> str | None:
    """The generated settings.xml for the person's `text` (None when it is not a settings document gtd
    reads: a DOCTYPE or an entity is refused outright, never expanded)."""
    if "<!DOCTYPE" in text or "<!ENTITY" in text:
        return None
    import xml.etree.ElementTree as ET

    try:
        root = ET.fromstring(text)
    except ET.ParseError:
        return None
    if _local(root.tag) != "settings":
        return None
    from gtd.sandbox.policy.registries import host_port, strip_credentials

    hosts = {h.lower() for h in hosts}
    ET.register_namespace("", NAMESPACE)
    out = ET.Element(f"{{{NAMESPACE}}}settings")
    opted_ids: set[str] = set()

    def sub(parent, name: str, value: str | None = None):
        element = ET.SubElement(parent, f"{{{NAMESPACE}}}{name}")
        if value is not None:
            element.text = value
        return element

    def copy_fields(source, target, names) -> None:
        for name in names:
            value = _text(source, name)
            if value is not None:
                if name == "url":
                    hp = host_port(value)
                    if hp and hp[0] in hosts and _text(source, "id"):
                        opted_ids.add(_text(source, "id"))
                    value = strip_credentials(value, hosts)
                sub(target, name, value)

    for name in TOP_TEXT:
        value = _text(root, name)
        if value is not None:
            sub(out, name, value)
    for group in _children(root, "pluginGroups")[:1]:
        groups = sub(out, "pluginGroups")
        for item in _children(group, "pluginGroup"):
            if _plain(item):
                sub(groups, "pluginGroup", _plain(item))
    for mirrors in _children(root, "mirrors")[:1]:
        target = sub(out, "mirrors")
        for mirror in _children(mirrors, "mirror"):
            copy_fields(mirror, sub(target, "mirror"), MIRROR)
    for profiles in _children(root, "profiles")[:1]:
        target = sub(out, "profiles")
        for profile in _children(profiles, "profile"):
            kept = sub(target, "profile")
            copy_fields(profile, kept, ("id",))
            for activation in _children(profile, "activation")[:1]:
                copy_fields(activation, sub(kept, "activation"), ("activeByDefault",))
            for group, item in REPOSITORY_KINDS:
                for repos in _children(profile, group)[:1]:
                    repos_out = sub(kept, group)
                    for repo in _children(repos, item):
                        repo_out = sub(repos_out, item)
                        copy_fields(repo, repo_out, REPOSITORY)
                        for kind in ("releases", "snapshots"):
                            for policy in _children(repo, kind)[:1]:
                                copy_fields(policy, sub(repo_out, kind), POLICY)
    for active in _children(root, "activeProfiles")[:1]:
        target = sub(out, "activeProfiles")
        for item in _children(active, "activeProfile"):
            if _plain(item):
                sub(target, "activeProfile", _plain(item))
    servers = [s for group in _children(root, "servers")[:1] for s in _children(group, "server")
               if _text(s, "id") in opted_ids]
    if servers:
        target = sub(out, "servers")
        for server in servers:
            target.append(server)  # the person opted this registry's host in: their server entry as it is
    ET.indent(out)
    return ("<!-- written by gtd from your ~/.m2/settings.xml: mirrors, repositories and listed settings only;"
            " servers, proxies and properties left out (docs/registry-settings.md) -->\n"
            + ET.tostring(out, encoding="unicode") + "\n")
