"""The promises a query sandbox makes, checked against docker and bwrap alike."""

from __future__ import annotations

import socket

from runbook.sandbox.probes import DNS_SCRIPT, connect_script, host_server


def host_ip() -> str | None:
    """This machine's address on its main interface (no packet is sent)."""
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        probe.connect(("10.255.255.255", 1))
        return probe.getsockname()[0]
    except OSError:
        return None
    finally:
        probe.close()


def test_store_is_readable_at_store_and_in_env(make_box):
    box = make_box()
    result = box.exec(["rg", "-n", "Checkout", "/store"], timeout=10)
    assert result.ok, result.output
    assert "/store/trajectories/t-1/states/0000.md:2:Checkout button" in result.output
    assert box.exec("echo $RUNBOOK_STORE_DIR", timeout=10).output.strip() == "/store"


def test_runs_as_non_root(make_box):
    assert make_box().exec(["id", "-u"], timeout=10).output.strip() not in ("", "0")


def test_connect_to_host_loopback_server_fails(make_box):
    box = make_box()
    with host_server("127.0.0.1") as port:
        result = box.exec(["python3", "-"], timeout=10, stdin=connect_script("127.0.0.1", port))
    assert result.exit_code != 0 and "HOST-SECRET" not in result.output, result.output


def test_connect_to_host_address_fails(make_box):
    box = make_box()
    address = host_ip()
    if address is None:
        return  # no routable interface on this host: nothing beyond loopback to reach
    with host_server("0.0.0.0") as port:
        result = box.exec(["python3", "-"], timeout=10, stdin=connect_script(address, port))
    assert result.exit_code != 0 and "HOST-SECRET" not in result.output, result.output


def test_dns_fails(make_box):
    result = make_box().exec(["python3", "-"], timeout=15, stdin=DNS_SCRIPT)
    assert result.exit_code != 0 and "RESOLVED" not in result.output, result.output


def test_writing_into_the_store_fails(make_box, tiny_store):
    box = make_box()
    for cmd in [
        "echo x > /store/new.txt",
        "echo x >> /store/runbook.json",
        "rm /store/runbook.json",
        "mkdir /store/d",
        "mv /store/runbook.json /store/r.json",
    ]:
        assert box.exec(cmd, timeout=10).exit_code != 0, cmd
    assert sorted(p.name for p in tiny_store.iterdir()) == ["runbook.json", "trajectories"]
    assert (tiny_store / "runbook.json").read_text() == '{"format": 1}\n'


def test_root_filesystem_is_read_only(make_box):
    box = make_box()
    for path in ["/usr/evil", "/etc/evil", "/evil", "/opt/runbook/tools/evil"]:
        assert box.exec(["touch", path], timeout=10).exit_code != 0, path


def test_file_outside_the_store_is_invisible(make_box, tmp_path):
    outside = tmp_path / "outside-secret.txt"
    outside.write_text("OUTSIDE-SECRET\n")
    outside.chmod(0o644)
    box = make_box()
    for cmd in (["cat", str(outside)], ["cat", "/store/../outside-secret.txt"]):
        result = box.exec(cmd, timeout=10)
        assert result.exit_code != 0 and "OUTSIDE-SECRET" not in result.output, result.output
    listing = box.exec(f"ls -a /store/.. {tmp_path}", timeout=10).output.split()
    assert "outside-secret.txt" not in listing


def test_scratch_persists_between_calls_of_one_query(make_box):
    box = make_box()
    assert box.exec("echo kept > /scratch/note.txt", timeout=10).ok
    assert box.exec(["cat", "note.txt"], timeout=10).output == "kept\n"  # the working folder is /scratch


def test_two_sandboxes_do_not_see_each_others_scratch(make_box):
    first, second = make_box(), make_box()
    assert first.exec("echo A-ONLY > /scratch/a.txt && echo A-TMP > /tmp/a.txt", timeout=10).ok
    result = second.exec("ls -a /scratch /tmp; cat /scratch/a.txt /tmp/a.txt", timeout=10)
    assert "A-ONLY" not in result.output and "A-TMP" not in result.output and "a.txt\n" not in result.output
    assert first.exec("cat /scratch/a.txt", timeout=10).output == "A-ONLY\n"


def test_fork_bomb_is_stopped_by_the_process_limit(make_box):
    box = make_box(pids=64)
    result = box.exec("bomb() { bomb | bomb & }; bomb; sleep 2", timeout=4)
    assert result.seconds < 4 + 10  # the host is still responsive: the call came back
    after = box.exec(["echo", "alive"], timeout=10)
    assert after.ok and after.output == "alive\n", after.output


def test_process_limit_refuses_forks_beyond_it(make_box):
    script = (
        "import os,time\nn=0\ntry:\n for i in range(500):\n  if os.fork()==0:\n   time.sleep(2); os._exit(0)\n"
        "  n+=1\n print('ALL', n)\nexcept OSError as e:\n print('STOPPED', n)\n"
    )
    result = make_box(pids=64).exec(["python3", "-"], timeout=20, stdin=script)
    assert "STOPPED" in result.output, result.output
    assert int(result.output.split("STOPPED")[1].split()[0]) <= 64


def test_memory_hog_is_killed(make_box):
    hog = "x = []\nwhile True:\n    x.append(bytearray(8 * 2**20))\n"  # touches every page: real memory
    result = make_box(memory_mb=128).exec(["python3", "-c", hog], timeout=30)
    assert result.exit_code != 0 and not result.timed_out, result  # the limit stopped it, not the timeout


def test_endless_loop_is_killed_by_the_timeout(make_box):
    result = make_box().exec("while true; do :; done", timeout=1.5)
    assert result.timed_out and result.exit_code == 137
    assert 1.5 <= result.seconds < 5
    assert "timed out after 1.5 s" in result.output


def test_background_process_does_not_outlive_its_call(make_box):
    box = make_box()
    result = box.exec("sleep 30 & echo started", timeout=10)
    assert result.ok and result.seconds < 5 and result.output == "started\n"


def test_huge_output_is_cut_and_says_so(make_box):
    box = make_box(output_bytes=1_000)
    result = box.exec("head -c 5000000 /dev/zero | tr '\\0' y", timeout=20)
    assert result.truncated and result.cut_bytes == 5_000_000 - 1_000 and result.exit_code == 0
    assert result.output.startswith("y" * 1_000)
    assert "output cut to the first 1,000 bytes; 4,999,000 more bytes were not shown" in result.output


def test_endless_output_is_stopped(make_box):
    result = make_box(output_bytes=1_000).exec(["yes"], timeout=60)
    assert result.truncated and result.seconds < 30 and "stopped for writing too much" in result.output


def test_exit_code_stdin_and_tools_path(make_box):
    box = make_box()
    assert box.exec("exit 7", timeout=10).exit_code == 7
    assert (
        box.exec(["python3", "-c", "import sys; print(sys.stdin.read()[::-1])"], timeout=10, stdin="abc").output
        == "cba\n"
    )
    big = "line\n" * 40_000  # 200 kB: over one environment string, so docker splits it
    assert box.exec(["wc", "-c"], timeout=10, stdin=big).output.strip() == str(len(big))
    assert (
        box.exec(["python3", "-c", "import sys; print('/opt/runbook/tools' in sys.path)"], timeout=10).output
        == "True\n"
    )
