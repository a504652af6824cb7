"""4.9.3's TLS test mode (tls.test.mode.enable=true): ``rocketstore serve`` in enforcing mode with no
certificate configured serves TLS with a self-signed one made at start (its broker registering over TLS);
clients that check nothing get through, a client that checks the server's chain does not, a plain one is
closed."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from local_cluster import eventually
from serve_process import ServeProcess, cli, write_broker_conf

from rocketstore.client import NoRouteError, Producer, PullConsumer
from rocketstore.client.admin import AdminClient
from rocketstore.errors import ConnectionClosedError
from rocketstore.remoting.tls import TlsConfig, use_client_tls
from rocketstore.remoting.transport import run


def test_an_enforcing_server_in_test_mode_serves_tls_without_certificates(tmp_path: Path) -> None:
    tls_file = tmp_path / "tls.properties"
    tls_file.write_text("tls.server.mode=enforcing\ntls.test.mode.enable=true\ntls.enable=true\n")
    stranger_cert, stranger_key = tmp_path / "stranger.crt", tmp_path / "stranger.key"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj",
                    "/CN=stranger", "-keyout", str(stranger_key), "-out", str(stranger_cert)], check=True,
                   capture_output=True)
    with ServeProcess(tmp_path / "store", write_broker_conf(tmp_path / "broker.conf"),
                      extra_args=("--tls-config", str(tls_file))) as serve:
        async def round_trip(tls: TlsConfig | bool) -> list[bytes]:
            async with AdminClient(serve.namesrv_addr, tls=tls) as admin:
                await admin.create_topic("TestModeTopic", broker_addr=serve.broker_addr, read_queue_nums=1,
                                         write_queue_nums=1)
            async with Producer(serve.namesrv_addr, "test-mode-producer", tls=tls) as producer:
                sent = await producer.send("TestModeTopic", b"self-signed")
                assert sent.status == "SEND_OK"
            async with PullConsumer(serve.namesrv_addr, "test-mode-consumer", tls=tls) as consumer:
                [mq] = await consumer.queues("TestModeTopic")

                async def dispatched() -> bool:
                    return await consumer.max_offset(mq) > sent.queue_offset

                # the consume queue is built from the commitlog a moment after the send is answered
                await eventually(dispatched, 20, "the message in its consume queue")
                return [m.body for m in (await consumer.pull(mq, 0, 32)).messages]

        assert run(round_trip(TlsConfig(client_enable=True, test_mode=True))) == [b"self-signed"]
        assert run(round_trip(True)) == [b"self-signed"] * 2  # tls.client.authServer=false checks nothing either
        checking = TlsConfig(client_enable=True, client_auth_server=True, client_trust_cert_path=str(stranger_cert))
        with pytest.raises((ConnectionClosedError, NoRouteError), match="certificate is not trusted"):
            run(round_trip(checking))
        use_client_tls(None)
        with pytest.raises((ConnectionClosedError, NoRouteError), match="closed"):
            run(round_trip(False))
        sent = cli("send", "TestModeTopic", "from the cli", "-n", serve.namesrv_addr, "--tls")
        assert sent.returncode == 0, sent.stderr
        plain = cli("topic", "list", "-n", serve.namesrv_addr, "--request-timeout-s", "3")
        assert plain.returncode == 1 and "Traceback" not in plain.stderr, plain.stderr


#: a JDK TLS client trusting any server, as a 4.9.3 Java client in test mode (JDK provider, insecure trust
#: manager): it sends GET_ALL_TOPIC_LIST_FROM_NAMESERVER and prints the answer's header
JAVA_CLIENT = """\
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.nio.charset.StandardCharsets;
import java.security.cert.X509Certificate;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLSocket;
import javax.net.ssl.TrustManager;
import javax.net.ssl.X509TrustManager;

public class TestModeClient {
    public static void main(String[] args) throws Exception {
        TrustManager trustAll = new X509TrustManager() {
            public void checkClientTrusted(X509Certificate[] chain, String authType) {}
            public void checkServerTrusted(X509Certificate[] chain, String authType) {}
            public X509Certificate[] getAcceptedIssuers() { return new X509Certificate[0]; }
        };
        SSLContext ctx = SSLContext.getInstance("TLS");
        ctx.init(null, new TrustManager[] {trustAll}, null);
        try (SSLSocket socket = (SSLSocket) ctx.getSocketFactory().createSocket(args[0], Integer.parseInt(args[1]))) {
            socket.startHandshake();
            X509Certificate cert = (X509Certificate) socket.getSession().getPeerCertificates()[0];
            System.out.println("subject " + cert.getSubjectX500Principal().getName());
            byte[] header = "{\\"code\\":206,\\"language\\":\\"JAVA\\",\\"version\\":395,\\"opaque\\":1,\\"flag\\":0}"
                .getBytes(StandardCharsets.UTF_8);
            DataOutputStream out = new DataOutputStream(socket.getOutputStream());
            out.writeInt(4 + header.length);
            out.writeInt(header.length);
            out.write(header);
            out.flush();
            DataInputStream in = new DataInputStream(socket.getInputStream());
            in.readInt();
            byte[] answer = new byte[in.readInt() & 0xFFFFFF];
            in.readFully(answer);
            System.out.println("header " + new String(answer, StandardCharsets.UTF_8));
        }
    }
}
"""


def test_a_self_signed_server_is_refused_by_a_client_that_checks(tmp_path: Path) -> None:
    """The generated certificate is no CA's: a client with tls.client.authServer=true and the system's CAs
    refuses it at the handshake.  A JDK client that trusts any server (4.9.3's test-mode client) accepts it,
    over TLS 1.3 and 1.2."""
    tls_file = tmp_path / "tls.properties"
    tls_file.write_text("tls.server.mode=permissive\ntls.test.mode.enable=true\ntls.enable=true\n")
    with ServeProcess(tmp_path / "store", write_broker_conf(tmp_path / "broker.conf"),
                      extra_args=("--tls-config", str(tls_file))) as serve:
        async def topics(tls: TlsConfig | bool) -> list[str]:
            async with AdminClient(serve.namesrv_addr, tls=tls) as admin:
                return await admin.topic_list()

        assert run(topics(False))  # permissive: plain served too
        assert run(topics(True))
        with pytest.raises(ConnectionClosedError, match="certificate is not trusted"):
            run(topics(TlsConfig(client_enable=True, client_auth_server=True)))
        if shutil.which("javac") is None or shutil.which("java") is None:
            return
        (tmp_path / "TestModeClient.java").write_text(JAVA_CLIENT)
        subprocess.run(["javac", "TestModeClient.java"], cwd=tmp_path, check=True, capture_output=True, timeout=120)
        host, port = serve.namesrv_addr.rsplit(":", 1)
        for protocol in ("TLSv1.3", "TLSv1.2"):
            java = subprocess.run(["java", f"-Djdk.tls.client.protocols={protocol}", "-cp", str(tmp_path),
                                   "TestModeClient", host, port], capture_output=True, text=True, timeout=120,
                                  check=False)
            assert java.returncode == 0, java.stderr[-2000:]
            assert "subject CN=rocketstore-test-mode" in java.stdout and '"code":0' in java.stdout, java.stdout
