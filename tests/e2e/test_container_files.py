"""The container files (Dockerfile, docker/oxia.Dockerfile, docker-compose.yml, the Prometheus
and Grafana files) checked without a Docker engine: the toolchains they pin can build what the
lock and the Oxia wrapper need, every compose command line is valid for the binary it starts,
the healthchecks and scrape targets point at the listeners the commands open, and the dashboard
queries only metrics that exist."""

import json
import os
import re
import subprocess
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(os.environ.get("E2E_TARGET", "ours") == "kafka",
                                reason="our container files, nothing of Kafka's")

# Build scripts in the dependency graph that run a tool the Rust image lacks, and the Debian
# package that provides it (gcc, make and pkg-config come with the rust:*-bookworm images).
BUILD_TOOLS = {"tonic-build": "protobuf-compiler", "prost-build": "protobuf-compiler"}


def version(text: str) -> tuple:
    return tuple(int(part) for part in text.split("."))


def lock_packages() -> list:
    out = subprocess.run(["cargo", "metadata", "--format-version", "1", "--locked", "--offline",
                          "--filter-platform", "x86_64-unknown-linux-gnu"],
                         cwd=REPO, check=True, capture_output=True, text=True).stdout
    return json.loads(out)["packages"]


def dockerfile_stage_image(path: Path, image: str) -> str:
    for line in path.read_text().splitlines():
        match = re.match(rf"FROM {image}:(\S+)", line)
        if match:
            return match.group(1)
    raise AssertionError(f"{path}: no FROM {image}:<tag>")


def test_the_rust_image_is_at_least_the_highest_rust_version_in_the_lock():
    tag = dockerfile_stage_image(REPO / "Dockerfile", "rust")
    image = version(re.match(r"(\d+\.\d+(?:\.\d+)?)", tag).group(1))
    needed = max((version(p["rust_version"]), p["name"]) for p in lock_packages() if p.get("rust_version"))
    assert image >= needed[0][:len(image)], f"Dockerfile rust:{tag} is below {needed[1]}'s rust-version {needed[0]}"


def test_the_build_image_installs_every_tool_a_build_script_needs():
    installed = " ".join(re.findall(r"apt-get install[^\n]*", (REPO / "Dockerfile").read_text()))
    names = {p["name"] for p in lock_packages()}
    for crate, package in BUILD_TOOLS.items():
        if crate in names:
            assert package in installed, f"{crate}'s build script needs {package}; the Dockerfile does not install it"


def test_the_oxia_image_builds_the_wrapper_our_tests_run():
    compose = yaml.safe_load((REPO / "docker-compose.yml").read_text())
    oxia = compose["services"]["oxia"]
    context = (REPO / oxia["build"]["context"]).resolve()
    assert context == (REPO / "scripts/oxia-wrapper").resolve()
    dockerfile = (context / oxia["build"]["dockerfile"]).resolve()
    go_tag = dockerfile_stage_image(dockerfile, "golang")
    go_mod = (context / "go.mod").read_text()
    wanted = re.search(r"^go (\S+)", go_mod, re.M).group(1)
    assert version(re.match(r"(\d+\.\d+)", go_tag).group(1)) >= version(wanted)[:2]
    assert "github.com/oxia-db/oxia/common v0.15.0" in go_mod
    assert oxia["command"][0] == "standalone"


def our_services(compose: dict) -> dict:
    return {name: s for name, s in compose["services"].items() if s.get("image") == "diskless-kafka:local"}


def test_every_compose_command_line_is_valid_for_the_binary_it_starts():
    compose = yaml.safe_load((REPO / "docker-compose.yml").read_text())
    services = our_services(compose)
    assert {"broker-1", "broker-2", "broker-3", "compactor"} <= set(services)
    binaries = {"broker": os.environ.get("BROKER_BIN", str(REPO / "target/debug/broker")),
                "compactor": os.environ.get("COMPACTOR_BIN", str(REPO / "target/debug/compactor"))}
    for name, service in services.items():
        entrypoint = (service.get("entrypoint") or ["broker"])[0]
        env = {k: str(v) for k, v in (service.get("environment") or {}).items()}
        # The compose file sets BROKER_ variables for every service; the compactor reads its own.
        if entrypoint == "compactor":
            env = {k.replace("BROKER_", "COMPACTOR_", 1): v for k, v in env.items() if k != "BROKER_COMPACTION"}
        run = subprocess.run([binaries[entrypoint], *service["command"], "--check-config"],
                             env={"PATH": os.environ["PATH"], **env}, capture_output=True, text=True)
        assert run.returncode == 0, f"{name}: {run.stdout}{run.stderr}"


def http_port(command: list) -> str:
    return command[command.index("--http-listen") + 1].rsplit(":", 1)[1]


def test_healthchecks_and_scrape_targets_point_at_each_services_http_listener():
    compose = yaml.safe_load((REPO / "docker-compose.yml").read_text())
    prometheus = yaml.safe_load((REPO / "docker/prometheus.yml").read_text())
    targets = {t for job in prometheus["scrape_configs"] for c in job["static_configs"] for t in c["targets"]}
    for name, service in our_services(compose).items():
        port = http_port(service["command"])
        check = " ".join(service["healthcheck"]["test"])
        assert f":{port}/readyz" in check, f"{name}: healthcheck {check}"
        assert f"{name}:{port}" in targets, f"{name} is not scraped"
    assert compose["services"]["prometheus"]["profiles"] == ["monitoring"]


def test_the_dashboard_queries_only_documented_metrics():
    documented = set(re.findall(r"`((?:kafka|diskless)_[a-z_]+)`", (REPO / "docs/metrics.md").read_text()))
    dashboard = json.loads((REPO / "docker/grafana/dashboards/diskless-kafka.json").read_text())
    exprs = [t["expr"] for panel in dashboard["panels"] for t in panel.get("targets", [])]
    assert exprs, "the dashboard has no queries"
    for expr in exprs:
        for metric in re.findall(r"\b((?:kafka|diskless)_[a-z_]+)", expr):
            base = re.sub(r"_(bucket|sum|count)$", "", metric)
            assert metric in documented or base in documented, f"{metric} (in {expr}) is not in docs/metrics.md"
