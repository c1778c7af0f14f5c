"""The torch.distributed (gloo) backend: real processes on localhost."""

import pytest

from protocols.errors import InputError, PeerFailedError, PeerTimeoutError
from protocols.transport import run_parties
from protocols.transport.torchdist import parse_address
from tests.protocols.transport import roles

pytestmark = pytest.mark.multiprocess


def test_three_processes_exchange_tagged_messages_and_count_bytes():
    run = run_parties({"a": roles.ring, "b": roles.ring, "c": roles.ring}, backend="torch",
                      kwargs={"a": {"length": 10}, "b": {"length": 10}, "c": {"length": 10}},
                      record=True, timeout=60)

    assert run.results == {"a": 20.0, "b": 0.0, "c": 10.0}
    assert all(c["messages_sent"] == 1 and c["messages_received"] == 1 for c in run.comm.values())
    assert run.bytes == sum(c["bytes_received"] for c in run.comm.values())
    assert [m.src for m in run.logs["a"]] == ["c"]


def test_same_role_code_gives_same_result_on_both_backends():
    parties = {"a": roles.ring, "b": roles.ring}

    local = run_parties(parties)
    remote = run_parties(parties, backend="torch", timeout=60)

    assert local.results == remote.results
    assert local.bytes == remote.bytes


def test_each_party_process_that_used_cuda_reports_its_own_gpu_peak():
    # Arrange: two parties fake a GPU's counters in their own processes; the third uses none
    parties = {"a": roles.ring_on_a_fake_gpu, "b": roles.ring_on_a_fake_gpu, "c": roles.ring}
    kwargs = {"a": {"peak_mib": 3.0}, "b": {"peak_mib": 7.5}, "c": {"length": 4}}
    # Act
    run = run_parties(parties, backend="torch", kwargs=kwargs, timeout=60)
    # Assert: each process its own peak; the one that used no GPU absent
    assert run.gpu_peak_mib == {"a": 3.0, "b": 7.5}
    assert run.gpu_fields() == {"gpu_peak_mib": 7.5, "gpu_peak_mib_per_party": {"a": 3.0, "b": 7.5}}


def test_parties_in_one_process_report_no_per_party_gpu_peak():
    run = run_parties({"a": roles.ring, "b": roles.ring})

    assert run.gpu_peak_mib == {} and run.gpu_fields() == {}


def test_party_processes_leave_ctrl_c_to_the_launcher():
    import signal

    # Act
    run = run_parties({"a": roles.sigint_blocked, "b": roles.sigint_blocked}, backend="torch", timeout=60)
    # Assert: SIGINT is blocked in each party, and no longer in the launcher once they started
    assert run.results == {"a": True, "b": True}
    assert signal.SIGINT not in signal.pthread_sigmask(signal.SIG_BLOCK, [])


def test_error_in_one_process_is_reraised_in_the_caller():
    with pytest.raises(KeyError, match="on purpose"):
        run_parties({"fails": roles.fails, "waits": roles.waits}, backend="torch", timeout=60)


def test_silent_peer_gives_timeout_naming_it():
    with pytest.raises(PeerTimeoutError, match="'silent'"):
        run_parties({"silent": roles.silent, "waiter": roles.waits_briefly}, backend="torch")


def test_peer_that_closed_its_transport_fails_the_wait_at_once():
    with pytest.raises(PeerFailedError, match="'quits' closed"):
        run_parties({"quits": roles.quits, "waiter": roles.waits_for_quitter}, backend="torch")


def test_sending_to_a_peer_that_closed_its_transport_fails_instead_of_vanishing():
    # gloo would buffer the frame and report it sent, to a party that will never read it
    with pytest.raises(PeerFailedError, match="'sender' cannot send to 'quits'"):
        run_parties({"quits": roles.quits, "sender": roles.sends_late}, backend="torch", timeout=60)


def _each_in_a_process(target, names, *args, ports=None):
    """``target(name, names, port, *args, results)`` in one spawned process per name; name -> outcome.
    ``ports``: passed as ``port`` instead of one free port."""
    import multiprocessing as mp

    from protocols.transport.torchdist import free_port

    port, ctx = ports or free_port(), mp.get_context("spawn")
    results = ctx.Queue()
    procs = [ctx.Process(target=target, args=(n, tuple(names), port, *args, results)) for n in names]
    for proc in procs:
        proc.start()
    outcome = dict(results.get(timeout=90) for _ in procs)
    for proc in procs:
        proc.join(timeout=30)
    return outcome


def _join(agreements):
    """Each party of ``agreements`` (name -> settings) joins in its own process; name -> outcome."""
    return _each_in_a_process(roles.join_and_report, tuple(agreements), agreements)


def test_parties_started_alike_join():
    assert _join({"a": {"method": "x"}, "b": {"method": "x"}}) == {"a": "ok", "b": "ok"}


def test_parties_started_with_other_settings_each_get_one_clear_error_instead_of_a_hang():
    # Act
    outcome = _join({"a": {"method": "stfl", "seed": 1}, "b": {"method": "he-vfl", "seed": 1}})
    # Assert: both sides name the difference, and only it
    assert outcome["a"] == ("ProtocolError: party 'a': the party joined as 'b' was started with method='he-vfl';"
                            " this party with method='stfl'. Start every party with the same")
    assert "the party joined as 'a' was started with method='stfl'" in outcome["b"]


def _authenticated_ring(distrust=None):
    """Three parties with identities, each trusting the others' keys (``distrust``: (who, whom)
    pins a stranger's key instead); name -> ring result or error text."""
    from protocols.channels import crypto

    names = ("a", "b", "c")
    keys = {n: crypto.private_bytes(crypto.new_private_key()) for n in names}
    public = {n: crypto.public_bytes(crypto.load_private(k)) for n, k in keys.items()}
    trust = {n: {m: public[m] for m in names if m != n} for n in names}
    if distrust:
        trust[distrust[0]][distrust[1]] = crypto.public_bytes(crypto.new_private_key())
    return _each_in_a_process(roles.authenticated_ring, names, keys, trust)


def test_parties_with_pinned_identities_talk_over_sealed_links():
    assert _authenticated_ring() == {"a": 10.0, "b": 0.0, "c": 5.0}  # what the plain ring gives


def test_a_forged_length_on_an_authenticated_link_fails_before_anything_is_allocated():
    # Arrange
    from protocols.channels import crypto

    names = ("v", "m")
    keys = {n: crypto.private_bytes(crypto.new_private_key()) for n in names}
    public = {n: crypto.public_bytes(crypto.load_private(k)) for n, k in keys.items()}
    trust = {"v": {"m": public["m"]}, "m": {"v": public["v"]}}
    # Act: m announces a 16 GiB frame with a made-up tag
    outcome = _each_in_a_process(roles.forged_length, names, keys, trust)
    # Assert: the length itself fails authentication (before, it was read unsealed and allocated)
    assert outcome["m"] == "sent"
    assert outcome["v"] == "CryptoError: party 'v': a frame from 'm' failed authentication"


def test_a_failed_handshake_leaves_the_process_free_to_join_again():
    # Arrange: a pins a stranger's key for b, so their handshake fails
    from protocols.channels import crypto
    from protocols.transport.torchdist import free_port

    names = ("a", "b")
    keys = {n: crypto.private_bytes(crypto.new_private_key()) for n in names}
    public = {n: crypto.public_bytes(crypto.load_private(k)) for n, k in keys.items()}
    trust = {"a": {"b": crypto.public_bytes(crypto.new_private_key())}, "b": {"a": public["a"]}}
    ports = (free_port(), free_port())
    # Act
    outcome = _each_in_a_process(roles.rejoin_after_a_failed_handshake, names, keys, trust, ports=ports)
    # Assert
    assert outcome == {n: ("CryptoError, group left", "joined") for n in names}


def test_a_party_pinning_a_key_its_peer_lacks_stops_both_at_the_handshake():
    outcome = _authenticated_ring(distrust=("c", "a"))
    assert outcome["c"].startswith("CryptoError: party 'c': the link to 'a' failed authentication")
    assert outcome["a"].startswith("CryptoError: party 'a': the link to 'c' failed authentication")


def test_gloo_errors_are_cut_to_their_gist():
    from protocols.transport.rendezvous import gloo_reason

    text = ("[/__w/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:553] Connection closed by peer "
            "[127.0.0.1]:45785. This is typically caused by a remote worker crashing. GLHF!")
    assert gloo_reason(RuntimeError(text)) == "Connection closed by peer [127.0.0.1]:45785"


def test_the_first_party_on_a_port_in_use_says_so():
    import socket

    from protocols.errors import ProtocolError
    from protocols.transport.torchdist import TorchDistTransport

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(ProtocolError, match=f"cannot listen at 127.0.0.1:{port}: the port is in use"
                                                 " \\(another party started as 'a', or another program\\)"):
            TorchDistTransport("a", ("a", "b"), host="127.0.0.1", port=port, connect_timeout=5)


def test_a_loopback_rendezvous_store_listens_on_loopback_only():
    # before, TCPStore listened on every interface whatever host it was given, so a local run's
    # unauthenticated store was reachable from other machines
    import time

    from protocols.transport.rendezvous import connect
    from protocols.transport.torchdist import free_port

    port = free_port()
    store = connect("127.0.0.1", port, 1, True, time.monotonic() + 5)
    store.set("k", "v")
    listening = [line.split()[1] for line in _tcp_listeners() if line.split()[1].endswith(f":{port:04X}")]

    assert listening == [f"0100007F:{port:04X}"]  # 127.0.0.1, not 00000000 (every interface)
    assert connect("127.0.0.1", port, 1, False, time.monotonic() + 5).get("k") == b"v"


def _tcp_listeners():
    with open("/proc/net/tcp") as table:  # columns: sl, local address, remote address, state (0A: LISTEN)
        return [line for line in table.read().splitlines()[1:] if line.split()[3] == "0A"]


@pytest.mark.parametrize("text", ["localhost", "host:0", "host:70000", "host:abc", ":80", "[::1]:80:1", "[]:80",
                                  "[::1:80", "a]:80"])
def test_bad_addresses_give_one_line_errors(text):
    with pytest.raises(InputError, match="HOST:PORT|invalid port"):
        parse_address(text)


def test_secure_aggregation_runs_across_three_processes():
    import numpy as np

    from protocols.channels import SecAggConfig, average_client, average_server

    config = SecAggConfig(secure=True, threshold=2)
    vectors = {"c0": np.array([1.0, -2.0, 3.5]), "c1": np.array([3.0, 4.0, -0.5])}
    kwargs = {"server": {"clients": list(vectors), "config": config},
              **{c: {"server": "server", "vector": v, "weight": 1.0, "config": config}
                 for c, v in vectors.items()}}

    run = run_parties({"server": average_server, "c0": average_client, "c1": average_client},
                      kwargs=kwargs, backend="torch", timeout=60, record=True)

    np.testing.assert_allclose(run.results["server"], [2.0, 1.0, 1.5], atol=1e-6)
    masked = [m["y"] for m in run.logs["server"] if "y" in m.fields]
    assert len(masked) == 2 and all(m.dtype == np.uint64 for m in masked)


def test_a_script_without_a_main_guard_gets_the_reason_not_a_bootstrap_error(tmp_path):
    import subprocess
    import sys

    # Arrange: the README's example as a script, without `if __name__ == "__main__":`
    script = tmp_path / "unguarded.py"
    script.write_text("from protocols.transport import run_parties\n"
                      "from protocols.psi import psi_two_party\n"
                      "kwargs = {'left': {'peer': 'right', 'ids': ['a']}, 'right': {'peer': 'left', 'ids': ['a']}}\n"
                      "run_parties({'left': psi_two_party, 'right': psi_two_party}, backend='torch', timeout=30,\n"
                      "            kwargs=kwargs)\n")
    # Act
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    # Assert: the caller's error says what to do
    last = done.stderr.strip().splitlines()[-1]
    assert done.returncode != 0 and last.startswith("protocols.errors.ProtocolError: party process")
    assert "under `if __name__ == \"__main__\":`" in last


def test_an_address_that_listens_but_never_answers_fails_at_the_deadline_instead_of_hanging(monkeypatch):
    # Arrange: a socket that accepts connections and says nothing (a stopped party, another program);
    # torch's store client would wait for its first answer forever
    import socket
    import threading
    import time

    from protocols.errors import ProtocolError
    from protocols.transport import watch
    from protocols.transport.torchdist import TorchDistTransport

    marked = []
    monkeypatch.setattr(watch, "mark_stranded", lambda: marked.append(True))  # not this test process

    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen()
    port = silent.getsockname()[1]
    start, outcome = time.monotonic(), {}

    def join() -> None:
        try:
            TorchDistTransport("b", ("a", "b"), host="127.0.0.1", port=port, connect_timeout=2)
        except ProtocolError as exc:
            outcome["error"] = exc

    # Act: in a thread, so that a hang fails this test instead of the suite
    worker = threading.Thread(target=join, daemon=True)
    worker.start()
    worker.join(30)
    silent.close()
    # Assert: the one-line rendezvous error, soon after the 2 s deadline
    assert not worker.is_alive() and time.monotonic() - start < 15
    assert "does not answer as a rendezvous store" in str(outcome["error"]) and marked == [True]
