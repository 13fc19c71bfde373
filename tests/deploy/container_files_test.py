#!/usr/bin/python3
"""tests/deploy/container_files_test.py — docker/Dockerfile and docker/compose.yaml against the tree.

No container engine runs in CI, so this checks what can go stale without one:
  * every file the Dockerfile and the compose file name exists (build context, dockerfile, COPY
    sources, bind-mounted host paths), and the Prometheus/Grafana files find each other at the
    container paths compose mounts them on;
  * every TCLD_* variable they set is one tcld reads: `tcld --help` lists the flags, and each flag
    --some-name has the twin TCLD_SOME_NAME (daemon/config.cc);
  * the image is built the way CI builds: the same scripts/install-deps.sh, and the cmake configure
    and build commands of scripts/test.sh, equal up to what an image may change (the build folder,
    the build type, Release here, TCL_BUILD_TESTS=OFF, -j and --target);
  * tcld runs as a non-root user with a HEALTHCHECK on /healthz; the worker service can be scaled.

Run by ctest as `/usr/bin/python3 container_files_test.py` with TCLD_BINARY set (Debian's python3
with python3-yaml, both from scripts/install-deps.sh).
"""
import os
import re
import shlex
import subprocess
import unittest
import urllib.parse

import yaml

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
DOCKER = os.path.join(ROOT, "docker")
COMPOSE = os.path.join(DOCKER, "compose.yaml")
DOCKERFILE = os.path.join(DOCKER, "Dockerfile")
TEST_SH = os.path.join(ROOT, "scripts", "test.sh")


def dockerfile_instructions(path):
    """[(stage index, INSTRUCTION, argument text)] with continuation lines joined."""
    out, stage, pending = [], -1, ""
    with open(path) as f:
        for raw in f:
            line = raw.rstrip("\n")
            if not pending and (not line.strip() or line.lstrip().startswith("#")):
                continue
            if line.endswith("\\"):
                pending += line[:-1] + " "
                continue
            line, pending = pending + line, ""
            word, _, rest = line.strip().partition(" ")
            word = word.upper()
            if word == "FROM":
                stage += 1
            out.append((stage, word, rest.strip()))
    return out


def shell_commands(text):
    """Splits a RUN line or script line into its simple commands (at && || ; | and parentheses,
    outside quotes), each as argv; comments dropped."""
    lexer = shlex.shlex(text, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    commands, argv = [], []
    for token in lexer:
        if token in ("&&", "||", ";", "|", "(", ")", "&"):
            if argv:
                commands.append(argv)
            argv = []
        else:
            argv.append(token)
    if argv:
        commands.append(argv)
    return commands


def cmake_commands(commands):
    """(configure argv, build argv) among `commands`; None where absent."""
    configure = build = None
    for argv in commands:
        if argv and argv[0] == "cmake":
            if "--build" in argv:
                build = argv
            elif "-S" in argv or "-B" in argv:
                configure = argv
    return configure, build


def normalized_configure(argv):
    """The configure options that must match CI's: all but -B's folder, the build type and tests."""
    kept, skip = [], False
    for a in argv[1:]:
        if skip:
            skip = False
            continue
        if a == "-B":
            skip = True
            continue
        if a.startswith("-DCMAKE_BUILD_TYPE=") or a.startswith("-DTCL_BUILD_TESTS="):
            continue
        kept.append(a)
    return sorted(kept)


def normalized_build(argv):
    """The build options that must match CI's: all but the folder, -j and --target's list."""
    kept, i = [], 1
    while i < len(argv):
        a = argv[i]
        if a == "--build":
            i += 2
            continue
        if a in ("-j", "--parallel"):
            i += 2
            continue
        if a.startswith("-j") or a.startswith("--parallel="):
            i += 1
            continue
        if a in ("--target", "-t"):
            i += 1
            while i < len(argv) and not argv[i].startswith("-"):
                i += 1
            continue
        kept.append(a)
        i += 1
    return sorted(kept)


def tcld_help():
    binary = os.environ.get("TCLD_BINARY", os.path.join(ROOT, "build", "daemon", "tcld"))
    return subprocess.run([binary, "--help"], check=True, capture_output=True, text=True, timeout=30).stdout


def env_names(environment):
    """Variable names of a compose `environment` (mapping or list form)."""
    if isinstance(environment, dict):
        return list(environment)
    return [item.split("=", 1)[0] for item in environment or []]


def env_dict(environment):
    if isinstance(environment, dict):
        return {k: str(v) for k, v in environment.items()}
    return dict(item.split("=", 1) for item in environment or [] if "=" in item)


class ContainerFilesTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        with open(COMPOSE) as f:
            cls.compose = yaml.safe_load(f)
        cls.services = cls.compose["services"]
        cls.instructions = dockerfile_instructions(DOCKERFILE)
        help_text = tcld_help()
        flags = set(re.findall(r"^\s+--([a-z0-9-]+)", help_text, re.M)) - {"help"}
        cls.tcld_env = {"TCLD_" + f.upper().replace("-", "_") for f in flags}
        cls.tcld_commands = set(re.findall(r"^  ([a-z]+)\s", help_text.split("Options")[0], re.M))

    # -- files ---------------------------------------------------------------------------------

    def test_compose_build_context_and_dockerfile_exist(self):
        built = [s for s in self.services.values() if "build" in s]
        self.assertTrue(built, "no service builds the tcld image")
        for service in built:
            context = os.path.normpath(os.path.join(DOCKER, service["build"]["context"]))
            self.assertTrue(os.path.isdir(context), context)
            dockerfile = os.path.join(context, service["build"].get("dockerfile", "Dockerfile"))
            self.assertTrue(os.path.samefile(dockerfile, DOCKERFILE), dockerfile)
            self.assertEqual(context, ROOT, "the Dockerfile's COPY paths are relative to the repository root")

    def test_compose_bind_mounts_exist_and_named_volumes_are_declared(self):
        declared = set(self.compose.get("volumes") or {})
        for name, service in self.services.items():
            for volume in service.get("volumes", []):
                source = volume.split(":")[0] if isinstance(volume, str) else volume["source"]
                if source.startswith((".", "/")):
                    path = os.path.normpath(os.path.join(DOCKER, source))
                    self.assertTrue(os.path.exists(path), f"{name}: {source} -> {path} does not exist")
                else:
                    self.assertIn(source, declared, f"{name}: named volume {source} not declared")

    def test_dockerfile_copy_sources_exist(self):
        copies = [(s, a) for s, w, a in self.instructions if w == "COPY" and not a.startswith("--from")]
        self.assertTrue(copies)
        for _, args in copies:
            for source in shlex.split(args)[:-1]:
                self.assertTrue(os.path.exists(os.path.join(ROOT, source)), source)

    def test_dockerignore_keeps_build_folders_out(self):
        with open(os.path.join(ROOT, ".dockerignore")) as f:
            patterns = {line.strip() for line in f if line.strip() and not line.startswith("#")}
        for needed in ("build", "build-*", "var", "**/node_modules"):
            self.assertIn(needed, patterns)

    def test_prometheus_files_resolve_inside_the_container(self):
        prometheus = self.services["prometheus"]
        mounts = {v.split(":")[1]: os.path.normpath(os.path.join(DOCKER, v.split(":")[0]))
                  for v in prometheus["volumes"] if v.startswith(".")}
        config_path = next(a.split("=", 1)[1] for a in prometheus["command"] if a.startswith("--config.file="))
        self.assertIn(config_path, mounts, "--config.file is not a mounted file")
        with open(mounts[config_path]) as f:
            config = yaml.safe_load(f)
        for rule_file in config.get("rule_files", []):
            in_container = os.path.normpath(os.path.join(os.path.dirname(config_path), rule_file))
            self.assertIn(in_container, mounts, f"rule file {rule_file} is not mounted")
        targets = [t for job in config["scrape_configs"] for sc in job.get("static_configs", [])
                   for t in sc.get("targets", [])]
        targets += [f"{name}:{sd['port']}" for job in config["scrape_configs"]
                    for sd in job.get("dns_sd_configs", []) for name in sd["names"]]
        self.assertIn("tcld:8080", targets, "Prometheus does not scrape the tcld service")
        # Each scraped service listens on the scraped port (TCLD_LISTEN, the image's default, or
        # TCLD_METRICS_LISTEN for workers).
        image_env = dict(a.split("=", 1) for _, w, a in self.instructions if w == "ENV" and "=" in a)
        for target in targets:
            host, port = target.rsplit(":", 1)
            if host not in self.services:
                continue
            env = env_dict(self.services[host].get("environment"))
            command = self.services[host]["command"][0]
            listens = [env.get("TCLD_METRICS_LISTEN", "")]
            if command == "serve":
                listens.append(env.get("TCLD_LISTEN", image_env.get("TCLD_LISTEN", "")))
            self.assertIn(port, [l.rsplit(":", 1)[-1] for l in listens if l], f"{host} does not listen on {port}")

    def test_grafana_provisioning_finds_prometheus_and_the_dashboard(self):
        grafana = self.services["grafana"]
        mounts = {v.split(":")[1]: os.path.normpath(os.path.join(DOCKER, v.split(":")[0]))
                  for v in grafana["volumes"] if v.startswith(".")}
        provisioning = mounts["/etc/grafana/provisioning"]
        with open(os.path.join(provisioning, "datasources", "prometheus.yml")) as f:
            datasources = yaml.safe_load(f)["datasources"]
        hosts = {urllib.parse.urlparse(d["url"]).netloc for d in datasources}
        self.assertIn("prometheus:9090", hosts)
        with open(os.path.join(provisioning, "dashboards", "tcl.yml")) as f:
            providers = yaml.safe_load(f)["providers"]
        dashboard_dirs = {os.path.normpath(p["options"]["path"]) for p in providers}
        mounted_json = [c for c, h in mounts.items() if h.endswith("tcl.json")]
        self.assertTrue(mounted_json)
        self.assertIn(os.path.dirname(mounted_json[0]), dashboard_dirs | {mounted_json[0]},
                      "the dashboard provider does not read the folder tcl.json is mounted in")

    # -- environment ---------------------------------------------------------------------------

    def test_every_tcld_variable_is_one_tcld_reads(self):
        self.assertIn("TCLD_DATABASE_URL", self.tcld_env)  # the --help parse itself works
        used = [(name, var) for name, s in self.services.items() for var in env_names(s.get("environment"))]
        used += [("Dockerfile", a.split("=", 1)[0].split()[0]) for _, w, a in self.instructions if w == "ENV"]
        tcld_vars = [(where, var) for where, var in used if var.startswith("TCLD_")]
        self.assertTrue(tcld_vars)
        for where, var in tcld_vars:
            self.assertIn(var, self.tcld_env, f"{where}: tcld has no flag for {var}")

    def test_tcld_services_run_tcld_commands_against_the_postgres_service(self):
        tcld_services = {n: s for n, s in self.services.items() if "TCLD_DATABASE_URL" in env_names(s.get("environment"))}
        self.assertEqual(set(tcld_services), {"tcld", "worker"})
        for name, service in tcld_services.items():
            self.assertIn(service["command"][0], self.tcld_commands, name)
            url = urllib.parse.urlparse(env_dict(service["environment"])["TCLD_DATABASE_URL"])
            self.assertIn(url.hostname, self.services, f"{name}: database host is not a service")
            self.assertEqual(self.services[url.hostname]["image"].split(":")[0], "postgres")
            self.assertEqual(self.services[url.hostname]["image"], "postgres:15")
            self.assertEqual(service["depends_on"][url.hostname]["condition"], "service_healthy")
        self.assertEqual(tcld_services["tcld"]["command"][0], "serve")  # serve migrates at start
        self.assertEqual(tcld_services["worker"]["command"][0], "worker")

    def test_worker_can_be_scaled(self):
        worker = self.services["worker"]
        self.assertNotIn("container_name", worker)
        self.assertNotIn("ports", worker)

    # -- build steps ---------------------------------------------------------------------------

    def test_image_builds_like_ci(self):
        with open(TEST_SH) as f:
            ci_commands = [argv for line in f for argv in shell_commands(line)]
        # scripts/test.sh times each step as `stage NAME COMMAND...`: the command is what follows.
        ci_commands = [argv[2:] if argv[:1] == ["stage"] and len(argv) > 2 else argv for argv in ci_commands]
        self.assertIn(["scripts/install-deps.sh"], ci_commands)
        ci_configure, ci_build = cmake_commands(ci_commands)
        self.assertIsNotNone(ci_configure, "no cmake configure in scripts/test.sh")
        self.assertIsNotNone(ci_build, "no cmake --build in scripts/test.sh")

        build_stage = [(w, a) for s, w, a in self.instructions if s == 0]
        runs = [argv for w, a in build_stage if w == "RUN" for argv in shell_commands(a)]
        self.assertEqual(runs[0], ["scripts/install-deps.sh"], "the build stage must start with CI's install script")
        configure, build = cmake_commands(runs)
        self.assertIsNotNone(configure)
        self.assertIsNotNone(build)
        self.assertIn("-DCMAKE_BUILD_TYPE=Release", configure)
        self.assertEqual(normalized_configure(configure), normalized_configure(ci_configure))
        self.assertEqual(normalized_build(build), normalized_build(ci_build))
        self.assertLess(runs.index(["scripts/install-deps.sh"]), runs.index(configure))

    def test_runtime_stage_is_debian_12_non_root_with_healthcheck(self):
        stages = [a.split()[0] for _, w, a in self.instructions if w == "FROM"]
        self.assertEqual(stages, ["debian:12", "debian:12"])
        runtime = [(w, a) for s, w, a in self.instructions if s == 1]
        runs = [argv for w, a in runtime if w == "RUN" for argv in shell_commands(a)]
        self.assertTrue(any(argv[0].endswith("install-deps.sh") and argv[1:] == ["--runtime"] for argv in runs))
        users = [a for w, a in runtime if w == "USER"]
        self.assertTrue(users and users[-1].split(":")[0] not in ("root", "0"), users)
        healthchecks = [a for w, a in runtime if w == "HEALTHCHECK"]
        self.assertEqual(len(healthchecks), 1)
        self.assertIn("/healthz", healthchecks[0])
        entrypoint = [a for w, a in runtime if w == "ENTRYPOINT"]
        self.assertEqual(entrypoint, ['["/usr/local/bin/tcld"]'])


if __name__ == "__main__":
    unittest.main(verbosity=2)
