"""monitoring/ is valid: Prometheus accepts the config and the rules, the rules' unit tests
pass, and the rules and the Grafana dashboard read only metrics declared in
wire/metrics.{h,cc} (or recording rules), covering every declared metric."""
import json
import os
import subprocess
import sys

import opslib
from opslib import repo_path, require_file

PROMTOOL = "/usr/bin/promtool"
CONFIG = repo_path("monitoring", "prometheus.yml")
RECORDING = repo_path("monitoring", "rules", "recording.yml")
ALERTS = repo_path("monitoring", "rules", "alerts.yml")
RULE_TESTS = repo_path("monitoring", "rules", "tests", "rules_test.yml")
DASHBOARD = repo_path("monitoring", "grafana", "tandem-dashboard.json")


def promtool(*args):
    assert os.access(PROMTOOL, os.X_OK), f"{PROMTOOL} missing: install Debian's prometheus"
    r = subprocess.run([PROMTOOL, *args], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, f"promtool {' '.join(args)}: {r.stdout}{r.stderr}"
    return r.stdout + r.stderr


def load_yaml(path):
    import yaml
    with open(require_file(path)) as f:
        return yaml.safe_load(f)


def rules():
    out = []
    for path in (RECORDING, ALERTS):
        for group in load_yaml(path)["groups"]:
            out += group["rules"]
    return out


def recorded_names():
    return {r["record"] for r in rules() if "record" in r}


def dashboard_exprs():
    with open(require_file(DASHBOARD)) as f:
        dash = json.load(f)
    exprs = []
    for panel in dash["panels"]:
        exprs += [(panel["title"], t["expr"]) for t in panel.get("targets", [])]
    return dash, exprs


def test_promtool_accepts_the_config_and_its_rule_files():
    out = promtool("check", "config", require_file(CONFIG))
    assert "2 rule files found" in out, out


def test_promtool_accepts_the_rules():
    out = promtool("check", "rules", require_file(RECORDING), require_file(ALERTS))
    assert out.count("SUCCESS") == 2, out


def test_rule_unit_tests_pass():
    out = promtool("test", "rules", require_file(RULE_TESTS))
    assert "SUCCESS" in out, out


def test_config_scrapes_coordinator_target_and_draft_every_second():
    config = load_yaml(CONFIG)
    assert config["global"]["scrape_interval"] == "1s", config["global"]
    components = {}
    for job in config["scrape_configs"]:
        for static in job["static_configs"]:
            components[static["labels"]["component"]] = static["targets"]
    assert set(components) == {"coordinator", "target", "draft"}, components


def test_rules_read_only_declared_metrics():
    declared = opslib.declared_metrics()
    recorded = recorded_names()
    for rule in rules():
        name = rule.get("record") or rule.get("alert")
        opslib.check_names(opslib.promql_names(rule["expr"]), declared, recorded,
                           f"rule {name}")


def test_alerts_cover_the_required_conditions():
    alerts = {r["alert"]: r for r in rules() if "alert" in r}
    for name in ("TandemTargetDown", "TandemAcceptanceCollapsed", "TandemHighErrorRate",
                 "TandemKvCacheNearCapacity"):
        assert name in alerts, f"alert {name} missing"
        assert alerts[name]["labels"]["severity"] in ("critical", "warning"), name
        assert alerts[name]["annotations"]["summary"], name


def test_dashboard_reads_only_declared_metrics():
    declared = opslib.declared_metrics()
    recorded = recorded_names()
    _, exprs = dashboard_exprs()
    assert len(exprs) >= 10, f"only {len(exprs)} queries in the dashboard"
    for title, expr in exprs:
        opslib.check_names(opslib.promql_names(expr), declared, recorded,
                           f"dashboard panel '{title}'")


def test_dashboard_has_the_required_panels_and_a_sane_layout():
    dash, exprs = dashboard_exprs()
    text = " ".join(e for _, e in exprs)
    for needle in ("acceptance_rate", "generated_tokens", "time_to_first_token_seconds:p50",
                   "time_to_first_token_seconds:p95", "inter_token_latency_seconds:p50",
                   "inter_token_latency_seconds:p95", "kv_cache", "active_sessions"):
        assert needle in text, f"no dashboard query reads {needle}"
    ids = [p["id"] for p in dash["panels"]]
    assert len(ids) == len(set(ids)), "duplicate panel ids"
    for p in dash["panels"]:
        g = p["gridPos"]
        assert g["x"] + g["w"] <= 24 and g["h"] > 0, (p["title"], g)
        if p["type"] != "row":
            assert p["targets"] and all("refId" in t for t in p["targets"]), p["title"]
    assert dash["uid"] and dash["title"], "dashboard needs a uid and a title"


def test_every_declared_metric_is_monitored():
    declared = opslib.declared_metrics()
    used = set()
    for rule in rules():
        used |= opslib.promql_names(rule["expr"])
    for _, expr in dashboard_exprs()[1]:
        used |= opslib.promql_names(expr)
    base = set()
    for name in used:
        for suffix in ("_bucket", "_sum", "_count"):
            if name.endswith(suffix):
                base.add(name[:-len(suffix)])
    missing = sorted(set(declared) - base - used)
    assert not missing, f"declared metrics no rule or panel reads: {missing}"


def test_the_name_parser_sees_through_promql():
    names = opslib.promql_names(
        'sum by (le) (rate(tandem_x_bucket{role="a b"}[1m])) / ignoring (position) group_left '
        'sum(rate(tandem:y:rate1m[5m])) and on () up{component="target"} == 0')
    assert names == {"tandem_x_bucket", "tandem:y:rate1m", "up"}, names


def test_the_readme_describes_the_files_that_are_there():
    """Issue 33: monitoring/README.md once said its rules and dashboard were not written yet."""
    readme = open(repo_path("monitoring", "README.md")).read()
    assert "not written yet" not in readme, "README.md says something is not written yet"
    for name in ("prometheus.yml", "rules/recording.yml", "rules/alerts.yml",
                 "grafana/tandem-dashboard.json"):
        assert os.path.exists(repo_path("monitoring", *name.split("/"))), name
        assert os.path.basename(name) in readme, f"README.md does not mention {name}"


if __name__ == "__main__":
    sys.exit(opslib.run_tests(globals()))
