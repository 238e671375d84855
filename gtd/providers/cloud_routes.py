"""Claude on Bedrock or Vertex behind the credential gateway: the cloud identity stays on the host, which signs.

Claude Code switched to a cloud (CLAUDE_CODE_USE_BEDROCK / CLAUDE_CODE_USE_VERTEX) would sign each request
itself with the person's cloud credentials, so they had to be inside the sandbox. Its SDKs allow a gateway
instead, and gtd is that gateway:

- **Bedrock.** Inside, claude gets `AWS_BEARER_TOKEN_BEDROCK` = the route's placeholder and
  `ANTHROPIC_BEDROCK_BASE_URL` = the gateway: it then sends `Authorization: Bearer <placeholder>` and signs
  nothing. On the host the gateway puts in the person's Bedrock API key (a real `AWS_BEARER_TOKEN_BEDROCK`),
  or signs the request with SigV4 from the host's AWS credential chain (botocore: keys, profiles, SSO,
  assume-role, credential_process; refreshed there). Control-plane calls (`/inference-profiles`) go to the
  region's `bedrock.` host, model calls to `bedrock-runtime.` (or to the person's own base URL).
- **Vertex.** Inside, claude gets `CLAUDE_CODE_SKIP_VERTEX_AUTH=1`, `ANTHROPIC_VERTEX_BASE_URL` = the gateway
  and the placeholder as its `Authorization` custom header. The gateway mints the access token on the host
  from the Google credential chain (google-auth: GOOGLE_APPLICATION_CREDENTIALS, gcloud's application-default
  login) and sends each request to the region its path names (or to the person's own base URL).

SigV4 and Vertex need gtd's `cloud` extra (`pip install '.[cloud]'`: botocore, google-auth). Without it, or
without any credential on the host, there is no route: the credentials reach the sandbox as before
(cloud_credentials.py) and `gtd doctor` says so and how to keep them out.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import tempfile
import threading
from pathlib import Path

from gtd.providers.cloud_credentials import BEDROCK, VERTEX, VERTEX_ENV_PREFIX, aws_files, google_files
from gtd.sandbox.network.credential_gateway import GatewayRoute

TYPE_CHECKING = False  # typing's, without importing typing (issue 13: start-up)
if TYPE_CHECKING:
    from typing import Mapping

CLOUD_EXTRA = "gtd's cloud extra: pip install '.[cloud]' in gtd's source dir"
# The switches claude still reads inside when the gateway signs: where to go, never who signs.
SWITCHES = {
    BEDROCK: ("CLAUDE_CODE_USE_BEDROCK", "ANTHROPIC_SMALL_FAST_MODEL_AWS_REGION", "ANTHROPIC_BEDROCK_SERVICE_TIER"),
    VERTEX: ("CLAUDE_CODE_USE_VERTEX", "CLOUD_ML_REGION", "ANTHROPIC_VERTEX_PROJECT_ID", "GOOGLE_CLOUD_PROJECT",
             "GCLOUD_PROJECT"),
}
BEDROCK_CONTROL_PLANE = ("inference-profiles", "foundation-models")  # served by `bedrock.`, not `bedrock-runtime.`
# What the gateway signs for (method and path after the route): model calls, and the control plane's listings.
# No `?` or `#` inside a segment (each would end the path the upstream sees before the checked call's end: a
# location `us-east5:deploy?x=` made the token go to Model Garden's deploy), no dot segment, no newline (\Z).
BEDROCK_CALLS = re.compile(r"^(POST model/(?!\.\.?/)[^/?#]+/(invoke|invoke-with-response-stream|converse|converse-stream|"
                           r"count-tokens)|GET (inference-profiles|foundation-models)(/(?!\.\.?(\?|\Z))[^/?#]+)?)"
                           r"(\?[^#\n]*)?\Z")
# Nor an encoded slash or backslash on Vertex (no Vertex name holds one: a front end that decoded it would route on
# segments gtd never saw).
VERTEX_CALLS = re.compile(r"^(?!.*%(?i:2f|5c))POST projects/(?!\.\.?/)[^/?#]+/locations/(?!\.\.?/)[^/?#]+/publishers/anthropic/models/"
                          r"[^/?#]+:(rawPredict|streamRawPredict)(\?[^#\n]*)?\Z")
VERTEX_SCOPE = "https://www.googleapis.com/auth/cloud-platform"
VERTEX_PROJECT_VARS = ("ANTHROPIC_VERTEX_PROJECT_ID", "GOOGLE_CLOUD_PROJECT", "GCLOUD_PROJECT")  # claude's project
REGION = re.compile(r"^[a-z0-9-]{1,40}\Z")
MAX_AWS_FILE = 256 * 1024
MAX_GOOGLE_FILE = 64 * 1024
GOOGLE_TYPES = ("service_account", "authorized_user")  # a key or a refresh token: nothing that runs a command


def claude_cloud_route(kind: str, why: str, environ: Mapping[str, str] | None = None,
                       workspace: Path | None = None) -> tuple[GatewayRoute | None, str]:
    """(the gateway route for claude on `kind`, "") or (None, why there is none: the credentials then reach
    the sandbox as before). Credential files in `workspace`, or linked from there, are the agent's: refused."""
    environ = os.environ if environ is None else environ
    if kind == BEDROCK:
        return bedrock_route(why, environ, workspace)
    return vertex_route(why, environ, workspace)


def switches(kind: str, environ: Mapping[str, str] | None = None) -> list[str]:
    """The variables claude is still given inside on `kind` behind the gateway (no credential among them)."""
    environ = os.environ if environ is None else environ
    names = list(SWITCHES[kind])
    if kind == VERTEX:
        names += sorted(k for k in environ if k.startswith(VERTEX_ENV_PREFIX))
    return names


# -- Bedrock ----------------------------------------------------------------------------------

def bedrock_route(why: str, environ: Mapping[str, str], workspace: Path | None = None, *, base: str | None = None,
                  region: str | None = None, env=None) -> tuple[GatewayRoute | None, str]:
    """Claude's Bedrock route; opencode and pi (cli_cloud_routes.py) give their own upstream `base`, `region` and
    `env` (a function of the signer: what the CLI is told inside)."""
    key = (environ.get("AWS_BEARER_TOKEN_BEDROCK") or "").strip()
    base = (environ.get("ANTHROPIC_BEDROCK_BASE_URL") if base is None else base) or ""
    base = base.strip().rstrip("/")
    region = region if region and REGION.match(region) else None
    if key:
        region = region or _env_region(environ) or "us-east-1"
        signer: object = BedrockKey(key, region, base)
    else:
        try:
            import botocore.session  # noqa: F401 - only to say it is missing before reading anything
        except ImportError:
            return None, f"signing Bedrock requests on the host needs botocore ({CLOUD_EXTRA})"
        with _checked_aws_files(environ, workspace) as (files, refused):
            if refused:
                return None, refused
            session = _aws_session(environ, files)
            try:
                credentials = session.get_credentials()
                region = region or _env_region(environ) or session.get_config_variable("region") or "us-east-1"
            except Exception as exc:  # noqa: BLE001 - a broken profile: the person hears botocore's reason
                return None, f"no usable AWS credentials on the host ({exc})"
        if credentials is None:
            return None, "no AWS credentials on the host"
        if not REGION.match(str(region)):
            region = "us-east-1"
        signer = AwsSigner(credentials, region, base)
    told = env(signer) if env is not None else (("CLAUDE_CODE_USE_BEDROCK", "1"), ("ANTHROPIC_BEDROCK_BASE_URL", "{url}"),
                                                 ("AWS_REGION", signer.region), ("AWS_BEARER_TOKEN_BEDROCK", "{placeholder}"))
    return GatewayRoute("bedrock", signer.upstream(""), signer=signer, env=told, origin=why), ""


def _env_region(environ: Mapping[str, str]) -> str | None:
    for var in ("AWS_REGION", "AWS_DEFAULT_REGION"):
        value = (environ.get(var) or "").strip()
        if REGION.match(value):
            return value
    return None


@contextlib.contextmanager
def _checked_aws_files(environ: Mapping[str, str], workspace: Path | None):
    """Private copies of the AWS config and credentials files, read once without trusting the workspace:
    botocore runs what they say (credential_process) on the host, so a file the agent wrote or linked is
    refused, and botocore reads the checked bytes, never the file again. Yields ({"config_file": copy,
    "credentials_file": copy}, "") or ({}, why refused)."""
    from gtd.workspace_files import read_metadata_text

    wanted = dict(zip(("config_file", "credentials_file"), aws_files(environ, _home(environ))))
    scratch = tempfile.mkdtemp(prefix="gtd-aws-")
    try:
        copies: dict[str, str] = {}
        for name, path in wanted.items():
            copy = os.path.join(scratch, name)
            if os.path.lexists(path):
                text = read_metadata_text(path, limit=MAX_AWS_FILE, untrusted=workspace)
                if text is None:
                    yield {}, (f"the AWS file {path} is in the workspace, reached through a link there, or not a "
                               "regular file: gtd does not let botocore run what the agent could have written")
                    return
                text, refused = _pinned_processes(text, path, workspace)
                if refused:
                    yield {}, refused
                    return
                fd = os.open(copy, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
                with os.fdopen(fd, "w") as out:
                    out.write(text)
            copies[name] = copy  # a missing file's copy is missing too: botocore reads nothing there
        yield copies, ""
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


CREDENTIAL_PROCESS = re.compile(r"^(\s*credential_process\s*=\s*)(.*?)\s*$", re.MULTILINE)


def _pinned_processes(text: str, path: Path, workspace: Path | None) -> tuple[str, str]:
    """(the file with each `credential_process` pinned, "") or ("", why refused). botocore runs that command on
    the host, by name on gtd's PATH and in gtd's current directory, the workspace: an activated project venv
    (or `.`) on that PATH, or a relative program, would run what the agent planted there. So each program is
    looked up on the PATH without the workspace (host_programs.py), and run by its absolute path under
    /usr/bin/env with that PATH, which the programs it starts by name find too."""
    import shlex

    from gtd.host_programs import host_path, host_program

    untrusted = [workspace] if workspace is not None else None
    refused: list[str] = []

    def pin(found: re.Match) -> str:
        try:
            words = shlex.split(found.group(2))
        except ValueError:
            words = []
        program = host_program(words[0], untrusted) if words else None
        env = host_program("env", untrusted)
        if program is None or env is None:
            refused.append(found.group(2))
            return found.group(0)
        return found.group(1) + shlex.join([env, f"PATH={host_path(untrusted)}", program, *words[1:]])

    pinned = CREDENTIAL_PROCESS.sub(pin, text)
    if refused:
        return "", (f"the AWS file {path} has credential_process = {refused[0]!r}, whose program is relative or "
                    "found only in the workspace or a relative PATH entry, where the agent can plant one: name it "
                    "by an absolute path outside the workspace (or drop that PATH entry before starting gtd)")
    return pinned, ""


def _aws_session(environ: Mapping[str, str], files: Mapping[str, str]):
    import botocore.session

    session = botocore.session.get_session()
    for name, path in files.items():
        session.set_config_variable(name, path)
    if environ.get("AWS_PROFILE"):
        session.set_config_variable("profile", environ["AWS_PROFILE"])
    return session


class _BedrockUpstream:
    name = "Bedrock"

    def __init__(self, region: str, base: str):
        self.region = region
        self.base = base

    def refuses(self, method: str, path: str) -> str | None:
        """Why a request is not signed for, or None. Only model calls and the two listings claude makes: the
        host's AWS identity may do far more (start async jobs writing to S3, delete inference profiles)."""
        return None if BEDROCK_CALLS.match(f"{method.upper()} {path}") else (
            f"{method} /{path.split('?')[0]} is not a model call; gtd signs only Bedrock's invoke and converse "
            "calls and the inference-profile and foundation-model listings")

    def upstream(self, path: str) -> str:
        """The person's base URL, else the region's control-plane host for its two calls, else bedrock-runtime."""
        if self.base:
            return self.base
        plane = "bedrock" if path.split("?")[0].split("/")[0] in BEDROCK_CONTROL_PLANE else "bedrock-runtime"
        return f"https://{plane}.{self.region}.amazonaws.com"


class BedrockKey(_BedrockUpstream):
    """A Bedrock API key (AWS_BEARER_TOKEN_BEDROCK on the host), put in as `Authorization: Bearer`."""

    name = "AWS_BEARER_TOKEN_BEDROCK"

    def __init__(self, key: str, region: str, base: str):
        super().__init__(region, base)
        self._key = key

    def secrets(self) -> tuple[str, ...]:
        return (self._key,)

    def sign(self, method: str, url: str, headers, body: bytes) -> list[tuple[str, str]]:
        return [("Authorization", f"Bearer {self._key}")]


class AwsSigner(_BedrockUpstream):
    """SigV4 with the host's AWS credentials (botocore's chain, refreshed by botocore when they expire)."""

    name = "AWS credentials (SigV4, signed on the host)"

    def __init__(self, credentials, region: str, base: str):
        super().__init__(region, base)
        self._credentials = credentials

    def secrets(self) -> tuple[str, ...]:
        frozen = self._credentials.get_frozen_credentials()
        return tuple(s for s in (frozen.secret_key, frozen.token) if s)

    def sign(self, method: str, url: str, headers, body: bytes) -> list[tuple[str, str]]:
        from botocore.auth import SigV4Auth
        from botocore.awsrequest import AWSRequest

        # Every header that goes upstream is signed (botocore leaves out the few AWS says not to, user-agent
        # among them): AWS refuses an x-amz-* header an SDK inside added that the signature does not cover.
        request = AWSRequest(method=method, url=url, data=body, headers=dict(headers))
        SigV4Auth(self._credentials.get_frozen_credentials(), "bedrock", self.region).add_auth(request)
        return [(k, v) for k, v in request.headers.items()
                if k.lower() in ("authorization", "x-amz-date", "x-amz-security-token")]


# -- Vertex -----------------------------------------------------------------------------------

def vertex_route(why: str, environ: Mapping[str, str], workspace: Path | None = None) -> tuple[GatewayRoute | None, str]:
    source = _google_credential_file(environ)
    if source is None:
        return None, "no Google credential file on the host (GOOGLE_APPLICATION_CREDENTIALS or gcloud's ADC)"
    try:
        import google.auth.transport.requests  # noqa: F401 - the refresh needs it
        from google.oauth2 import credentials as user_credentials
        from google.oauth2 import service_account
    except ImportError:
        return None, f"minting Vertex tokens on the host needs google-auth ({CLOUD_EXTRA})"
    from gtd.workspace_files import read_metadata_text

    text = read_metadata_text(source, limit=MAX_GOOGLE_FILE, untrusted=workspace)
    try:
        info = json.loads(text) if text is not None else None
    except ValueError:
        info = None
    if not isinstance(info, dict):
        return None, (f"the Google credential file {source} is in the workspace, reached through a link there, "
                      "or not a JSON object in a regular file")
    kind = info.get("type")
    if kind not in GOOGLE_TYPES:
        return None, (f"the Google credential file {source} is of type {kind!r}: gtd mints tokens on the host "
                      f"for {' and '.join(GOOGLE_TYPES)} only")
    try:
        if kind == "service_account":
            credentials = service_account.Credentials.from_service_account_info(info, scopes=[VERTEX_SCOPE])
        else:
            credentials = user_credentials.Credentials.from_authorized_user_info(info, scopes=[VERTEX_SCOPE])
    except Exception as exc:  # noqa: BLE001 - google-auth's reason names what the file lacks
        return None, f"the Google credential file {source} cannot be used ({exc})"
    base = (environ.get("ANTHROPIC_VERTEX_BASE_URL") or "").strip().rstrip("/")
    projects = tuple(dict.fromkeys(v.strip() for k in VERTEX_PROJECT_VARS if (v := environ.get(k) or "").strip()))
    signer = VertexToken(credentials, base, str(source), projects)
    custom = [line for line in (environ.get("ANTHROPIC_CUSTOM_HEADERS") or "").splitlines()
              if line.strip() and not line.lower().lstrip().startswith("authorization:")]
    env = (("CLAUDE_CODE_USE_VERTEX", "1"), ("CLAUDE_CODE_SKIP_VERTEX_AUTH", "1"),
           ("ANTHROPIC_VERTEX_BASE_URL", "{url}"),
           ("ANTHROPIC_CUSTOM_HEADERS", "\n".join([*custom, "Authorization: Bearer {placeholder}"])))
    region = (environ.get("CLOUD_ML_REGION") or "us-east5").strip()
    return GatewayRoute("vertex", signer.upstream(f"projects/-/locations/{region}/"), signer=signer, env=env,
                        origin=why), ""


def _google_credential_file(environ: Mapping[str, str]) -> Path | None:
    """The file google-auth's default chain would read first (never the metadata server, which would make
    every start wait on a network probe)."""
    named, adc = google_files(environ, _home(environ))
    return named if named is not None else adc if adc.is_file() else None


def _home(environ: Mapping[str, str]) -> Path:
    return Path(environ.get("HOME") or Path.home())


class VertexToken:
    """An access token minted on the host from the Google credentials, refreshed before it expires."""

    def __init__(self, credentials, base: str, source: str, projects: tuple[str, ...] = ()):
        self.name = f"Google credentials ({source}, tokens minted on the host)"
        self._projects = projects  # the person's project: the token bills no other one the identity reaches
        self._credentials = credentials
        self._base = base
        self._lock = threading.Lock()

    def secrets(self) -> tuple[str, ...]:
        return (self._credentials.token,) if self._credentials.token else ()

    def refuses(self, method: str, path: str) -> str | None:
        """Why a request is not given the token, or None: only Anthropic model calls (the token's scope is the
        whole of Google Cloud), in the person's project when one is set."""
        if not VERTEX_CALLS.match(f"{method.upper()} {path}"):
            return (f"{method} /{path.split('?')[0]} is not an Anthropic model call; gtd gives the Google token only "
                    "to rawPredict, streamRawPredict and count-tokens of publishers/anthropic models")
        project = path.split("/")[1]
        if self._projects and project not in self._projects:
            return (f"the call names project {project!r}, not yours ({', '.join(self._projects)}); to use it, set "
                    "ANTHROPIC_VERTEX_PROJECT_ID to it before gtd starts")
        return None

    def upstream(self, path: str) -> str:
        """The person's base URL, else the host of the region the request's path names (Vertex is regional)."""
        if self._base:
            return self._base
        found = re.match(r"projects/[^/]+/locations/([^/]+)/", path)
        region = found.group(1) if found and REGION.match(found.group(1)) else "us-east5"
        return ("https://aiplatform.googleapis.com/v1" if region == "global"
                else f"https://{region}-aiplatform.googleapis.com/v1")

    def sign(self, method: str, url: str, headers, body: bytes) -> list[tuple[str, str]]:
        import google.auth.transport.requests

        with self._lock:
            if not self._credentials.valid:
                self._credentials.refresh(google.auth.transport.requests.Request())
            return [("Authorization", f"Bearer {self._credentials.token}")]
