#!/usr/bin/python3
"""tests/scripts/continual_salts_test.py — scripts/gpu/continual_salts.sh's plumbing, without a GPU.

The script runs continual_study.sh once per split salt, side by side, and each run must get its own salt,
cache and logs, or two salts would be scored as one (or share a cache that holds the other's models). The
test runs it on a copy of scripts/gpu/ whose build.sh does nothing and whose bench_continual is a stub
that writes a bench_continual-format log naming the flags it was given.

Run by ctest as `/usr/bin/python3 continual_salts_test.py`.
"""
import os
import shutil
import subprocess
import tempfile
import unittest

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

# A stub bench_continual: its log names the salt, cache and threads it was run with, and scores the one
# distill step so that continual_steps.py has something to summarise (x86-16c's top-1 = 0.5 + salt/10).
STUB = r"""#!/usr/bin/env bash
echo "# bench_continual $* (gpu ${CUDA_VISIBLE_DEVICES:-all})"
salt=0; seed=1
while [ $# -gt 0 ]; do
  case "$1" in --split-salt) salt=$2; shift;; --seed) seed=$2; shift;; esac; shift
done
echo "# settings: old_weight 2, ewc 0.2, epochs 12, column_epochs 12, unlabeled_ratio 1, old_bank 20000, split_salt $salt, column_weight 1"
echo "x86-24c: 100 records, 90 measured; pool 80 programs in 8 tasks; eval split 4 tasks / 20 records (0.1 s)"
echo "step 0 (x86-24c): base top-1 0.8000/0.6000 (mean/sum) tuning 0.4000 on 4 eval tasks; 10 params"
echo "x86-16c: 50 records, 45 measured; pool 40 programs in 4 tasks; eval split 2 tasks / 10 records (0.1 s)"
echo "  distill                        on x86-24c    top-1 0.7900/0.6000 tuning 0.4000  (10 params)"
echo "  distill                        on x86-16c    top-1 0.$((5 + salt))000/0.5000 tuning 0.3000  (10 params)"
"""


class ContinualSaltsTest(unittest.TestCase):

    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.root = self.dir.name
        shutil.copytree(os.path.join(ROOT, "scripts", "gpu"), os.path.join(self.root, "scripts", "gpu"))
        shutil.copytree(os.path.join(ROOT, "bench", "lib"), os.path.join(self.root, "bench", "lib"))
        with open(os.path.join(self.root, "scripts", "gpu", "build.sh"), "w") as f:
            f.write("#!/usr/bin/env bash\nexit 0\n")
        self.build = os.path.join(self.root, "build")
        os.makedirs(os.path.join(self.build, "bench"))
        stub = os.path.join(self.build, "bench", "bench_continual")
        with open(stub, "w") as f:
            f.write(STUB)
        os.chmod(stub, 0o755)

    def tearDown(self):
        self.dir.cleanup()

    def test_each_salt_gets_its_own_split_cache_and_logs(self):
        logs, caches = os.path.join(self.root, "logs"), os.path.join(self.root, "caches")
        env = dict(os.environ, BUILD=self.build, LOGS=logs, CACHE_ROOT=caches, DATA="/nonexistent",
                   PO_ROOT="/nonexistent", SALTS="1 3", FLAGS="--old-bank 20000")
        env.pop("OUT", None)
        done = subprocess.run(["bash", os.path.join(self.root, "scripts", "gpu", "continual_salts.sh"), "1", "2"],
                              env=env, capture_output=True, text=True, timeout=60)
        self.assertEqual(done.returncode, 0, done.stderr)
        for salt in (1, 3):
            for seed in (1, 2):
                with open(os.path.join(logs, f"salt-{salt}", f"continual-s{seed}.log")) as f:
                    command = f.readline()
                self.assertIn(f"--split-salt {salt}", command)
                self.assertIn(f"--cache {caches}/salt-{salt} ", command)
                self.assertIn("--old-bank 20000", command)  # FLAGS kept beside the salt
                self.assertIn("--threads 2", command)
                self.assertIn(f"--seed {seed}", command)
        # The summary per salt: each salt's own scores, over both seeds.
        salt1 = done.stdout.split("######## salt 1")[1].split("######## salt 3")[0]
        salt3 = done.stdout.split("######## salt 3")[1]
        self.assertRegex(salt1, r"x86-16c\s+distill \(old_weight 2, ewc 0.2\)\s+mean 0.6000 ± 0.0000 .* n=2")
        self.assertRegex(salt3, r"x86-16c\s+distill \(old_weight 2, ewc 0.2\)\s+mean 0.8000 ± 0.0000 .* n=2")


    def test_deals_the_salts_across_the_gpus(self):
        logs = os.path.join(self.root, "logs")
        env = dict(os.environ, BUILD=self.build, LOGS=logs, CACHE_ROOT=os.path.join(self.root, "caches"),
                   DATA="/nonexistent", PO_ROOT="/nonexistent", SALTS="1 3 4", GPUS="2")
        env.pop("OUT", None)
        done = subprocess.run(["bash", os.path.join(self.root, "scripts", "gpu", "continual_salts.sh"), "1"],
                              env=env, capture_output=True, text=True, timeout=60)
        self.assertEqual(done.returncode, 0, done.stderr)
        for salt, gpu in ((1, 0), (3, 1), (4, 0)):
            with open(os.path.join(logs, f"salt-{salt}", "continual-s1.log")) as f:
                self.assertIn(f"(gpu {gpu})", f.readline())
        # The caller's own list of GPUs: the salts go to those, not to 0 and 1.
        env = dict(env, CUDA_VISIBLE_DEVICES="2,3", SALTS="1 3")
        env.pop("GPUS")
        done = subprocess.run(["bash", os.path.join(self.root, "scripts", "gpu", "continual_salts.sh"), "1"],
                              env=env, capture_output=True, text=True, timeout=60)
        self.assertEqual(done.returncode, 0, done.stderr)
        for salt, gpu in ((1, 2), (3, 3)):
            with open(os.path.join(logs, f"salt-{salt}", "continual-s1.log")) as f:
                self.assertIn(f"(gpu {gpu})", f.readline())

if __name__ == "__main__":
    unittest.main()
