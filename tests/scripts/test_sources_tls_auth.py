"""Pull sources behind TLS and authentication, end to end: one loadwatch scrapes a second
loadwatch that serves its own /metrics over HTTPS (--web.config.file) with basic auth, and a
third that also requires client certificates. Every case is one `kind: prometheus` source of
the same scraping daemon, so all run in parallel. Secrets must never show in its debug log,
/metrics, /api/v1/targets, /api/v1/sources or landing page.

Certificates are made at test time with openssl (the Pki of test_web_config.py); loopback only;
every process started here is stopped by its PID.
"""
import json
import os
import shutil
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
sys.path.insert(0, HERE)
from lwtest import Loadwatch  # noqa: E402
import lwtest  # noqa: E402
from test_web_config import Pki, Server, bcrypt, write  # noqa: E402

PASSWORD = "s3cret-Do-Not-Log-7319"
WRONG = "wrong-Do-Not-Log-4402"
TOKEN = "token-Do-Not-Log-9931"


class SourcesTlsAuth(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="lw-src-tls-")
        cls.pki = Pki(cls.dir)
        users = "basic_auth_users:\n  alice: '%s'\n" % bcrypt(PASSWORD, 4)
        cls.web_basic = cls.file("web-basic.yml", "tls_server_config:\n"
                                 "  cert_file: server1.crt\n  key_file: server1.key\n" + users)
        cls.web_mtls = cls.file("web-mtls.yml", "tls_server_config:\n"
                                "  cert_file: server1.crt\n  key_file: server1.key\n"
                                "  client_auth_type: RequireAndVerifyClientCert\n"
                                "  client_ca_file: ca1.crt\n")
        cls.file("right.pw", PASSWORD + "\n")
        cls.file("rotating.pw", WRONG + "\n")
        cls.file("token", TOKEN + "\n")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir)

    @classmethod
    def file(cls, name, text):
        path = os.path.join(cls.dir, name)
        write(path, text)
        return path

    def test_tls_basic_auth_bearer_and_mtls(self):
        with Server(self.web_basic) as basic, Server(self.web_mtls) as mtls:
            def source(name, peer, tls=None, **auth):
                s = {"name": name, "kind": "prometheus", "url": peer.https(),
                     "interval": "300ms", "timeout": "3s"}
                if tls is not None:
                    s["tls"] = tls
                s.update(auth)
                return s
            ca1 = {"ca_file": "ca1.crt"}  # relative: resolved against the config's directory
            alice = {"username": "alice", "password_file": "right.pw"}
            client = dict(ca1, cert_file="client1.crt", key_file="client1.key")
            sources = [
                source("good", basic, ca1, basic_auth=alice),
                source("rotating", basic, ca1,
                       basic_auth={"username": "alice", "password_file": "rotating.pw"}),
                source("wrong_ca", basic, {"ca_file": "ca2.crt"}, basic_auth=alice),
                source("insecure", basic, {"insecure_skip_verify": True}, basic_auth=alice),
                source("bearer", basic, ca1, bearer_token_file="token"),
                source("no_pw_file", basic, ca1,
                       basic_auth={"username": "alice", "password_file": "missing.pw"}),
                source("sni_ok", basic, dict(ca1, server_name="localhost"), basic_auth=alice),
                source("sni_bad", basic, dict(ca1, server_name="other.example"),
                       basic_auth=alice),
                source("mtls", mtls, client),
                source("mtls_no_cert", mtls, ca1),
                source("mtls_bad_key", mtls, dict(client, key_file="missing.key")),
            ]
            config = self.file("loadwatch.yml", json.dumps({"sources": sources}))  # JSON is YAML
            with Loadwatch(["--config.file=" + config, "--log.level=debug",
                            "--sample.interval=300ms"]) as lw:
                def state(samples, name):
                    up = lw.value("loadwatch_source_up", samples, source=name)
                    errors = {dict(ls)["reason"]: v for (n, ls), v in samples.items()
                              if n == "loadwatch_source_errors_total"
                              and ("source", name) in ls and v > 0}
                    return up, errors

                def settled(samples):
                    # Every source has an outcome: up, or down with a counted reason.
                    return all(state(samples, s["name"])[0] == 1 or state(samples, s["name"])[1]
                               for s in sources)
                samples = lw.wait_for(settled, timeout=15, what="every source scraped")
                outcome = {s["name"]: state(samples, s["name"]) for s in sources}
                for name, (up, errors) in outcome.items():
                    print("%-13s up=%d %s" % (name, up, errors))

                self.assertEqual(outcome["good"], (1, {}))
                # The peer's series arrived: all loadwatch_* families this loadwatch exports
                # too, so they are kept out of its page as reserved, and counted.
                lw.wait_for(lambda m: lw.value("loadwatch_dropped_series_total", m,
                                               collector="sources", reason="reserved") > 0,
                            timeout=5, what="the peer's series counted as reserved")
                self.assertEqual(outcome["insecure"], (1, {}))
                self.assertEqual(outcome["sni_ok"], (1, {}))
                self.assertEqual(outcome["mtls"], (1, {}))
                for name, reason in (("rotating", "http_status"), ("bearer", "http_status"),
                                     ("wrong_ca", "connect"), ("sni_bad", "connect"),
                                     ("mtls_no_cert", "connect"), ("no_pw_file", "credentials"),
                                     ("mtls_bad_key", "credentials")):
                    up, errors = outcome[name]
                    self.assertEqual(up, 0, name)
                    self.assertEqual(list(errors), [reason], name)
                log = lw.output()
                for name in ("rotating", "bearer"):  # the peer said no
                    self.assertRegex(log, "source %s: scrape failed \\(http_status\\): .*HTTP "
                                          "status 401" % name)
                self.assertIn("missing.pw: No such file or directory", log)

                # The password file is read at each scrape: a fixed one counts without SIGHUP.
                write(os.path.join(self.dir, "rotating.pw"), PASSWORD + "\n")
                lw.wait_for(lambda s: lw.value("loadwatch_source_up", s, source="rotating") == 1,
                            timeout=10, what="rotated password")

                seen = {"log": lw.output(), "/metrics": lw.metrics_text()}
                for path in ("/", "/api/v1/targets", "/api/v1/sources"):
                    status, _, body = lw.get(path)
                    self.assertEqual(status, 200, path)
                    seen[path] = body.decode(errors="replace")
                for where, text in seen.items():
                    for secret in (PASSWORD, WRONG, TOKEN):
                        self.assertNotIn(secret, text, "a secret in " + where)


if __name__ == "__main__":
    lwtest.main(verbosity=2)
