#!/usr/bin/env bash
# Builds RocketMQ 4.9.3's own Java name server, broker, client and mqadmin on this machine, to run beside
# rocketstore for differential and interoperability checks (see docs/java-peers.md).
#
#   scripts/java-peers/build.sh SOURCE [OUT]
#
# SOURCE: a RocketMQ git directory (the tag rocketmq-all-4.9.3 is archived from it) or an unpacked 4.9.3 tree.
# OUT:    where the build goes (default /tmp/rocketmq-java-4.9.3). Nothing is written into this repository.
#
# Without Maven Central, the dependencies come from places this machine class reaches: fastjson (1.2.48,
# real) from the pyalink wheel on PyPI, which bundles it unshaded; netty 4.1.48, logback, commons-*, guava,
# snakeyaml and jna from Debian. DLedger is not packaged anywhere reachable, so the three call sites that
# construct it (and the name server's cluster-test processor, which needs the tools module at start-up) are
# cut out of the copy in OUT; enabling enableDLegerCommitLog or clusterTest then fails at start. Nothing
# else in 4.9.3 is changed.
set -euo pipefail

src=${1:?usage: build.sh SOURCE [OUT]}
out=${2:-/tmp/rocketmq-java-4.9.3}
tag=rocketmq-all-4.9.3
debs="libnetty-java liblogback-java libcommons-validator-java libcommons-codec-java libyaml-snake-java
      libcommons-collections3-java libcommons-lang3-java libguava-java libslf4j-java libcommons-cli-java
      libjna-java"

missing=$(for p in $debs; do dpkg -s "$p" >/dev/null 2>&1 || echo "$p"; done)
if [ -n "$missing" ]; then
    echo "installing Debian packages:" $missing
    apt-get install -y -q $missing >/dev/null
fi
for tool in javac jar unzip; do
    command -v $tool >/dev/null || { echo "$tool not found (a Java 17 JDK and unzip are needed)" >&2
                                      exit 1; }
done

mkdir -p "$out"
out=$(cd "$out" && pwd)
if [ ! -d "$out/src/broker" ]; then
    rm -rf "$out/src" && mkdir -p "$out/src"
    if git --git-dir="$src" rev-parse -q --verify "$tag" >/dev/null 2>&1; then
        git --git-dir="$src" archive "$tag" | tar -x -C "$out/src"
    elif git -C "$src" rev-parse -q --verify "$tag" >/dev/null 2>&1; then
        git -C "$src" archive "$tag" | tar -x -C "$out/src"
    else
        cp -r "$src"/. "$out/src/"
    fi
fi

if [ ! -f "$out/jars/fastjson.jar" ]; then
    mkdir -p "$out/jars/wheel" "$out/jars/fastjson"
    python3 -m pip download -q --no-deps --dest "$out/jars/wheel" 'pyalink==1.6.2.post0'
    core=$(cd "$out/jars/wheel" && python3 - <<'EOF'
import glob, zipfile
wheel = glob.glob('pyalink-*.whl')[0]
with zipfile.ZipFile(wheel) as z:
    name = next(n for n in z.namelist() if n.endswith('.jar') and '/alink_core_' in n)
    z.extract(name, '.')
    print(name)
EOF
)
    (cd "$out/jars/fastjson" && unzip -q -o "$out/jars/wheel/$core" 'com/alibaba/fastjson/*' \
        'META-INF/maven/com.alibaba/fastjson/*' && jar cf "$out/jars/fastjson.jar" .)
    rm -rf "$out/jars/wheel" "$out/jars/fastjson"
fi

# the DLedger and cluster-test cut, on the copy in OUT
python3 - "$out/src" <<'EOF'
import sys
root = sys.argv[1]
def cut(path, pairs):
    path = f'{root}/{path}'
    text = open(path).read()
    for old, new in pairs:
        if old in text:
            text = text.replace(old, new)
    open(path, 'w').write(text)
refuse = 'throw new UnsupportedOperationException("not in this build");'
cut('store/src/main/java/org/apache/rocketmq/store/DefaultMessageStore.java', [
    ('import org.apache.rocketmq.store.dledger.DLedgerCommitLog;\n', ''),
    ('this.commitLog = new DLedgerCommitLog(this);', refuse),
    ('storePathPhysic = ((DLedgerCommitLog)DefaultMessageStore.this.getCommitLog()).getdLedgerServer()'
     '.getdLedgerConfig().getDataStorePath();', refuse)])
cut('broker/src/main/java/org/apache/rocketmq/broker/BrokerController.java', [
    ('import org.apache.rocketmq.broker.dledger.DLedgerRoleChangeHandler;\n', ''),
    ('import org.apache.rocketmq.store.dledger.DLedgerCommitLog;\n', ''),
    ('DLedgerRoleChangeHandler roleChangeHandler = new DLedgerRoleChangeHandler(this, (DefaultMessageStore) '
     'messageStore);\n                    '
     '((DLedgerCommitLog)((DefaultMessageStore) messageStore).getCommitLog())'
     '.getdLedgerServer().getdLedgerLeaderElector().addRoleChangeHandler(roleChangeHandler);', refuse)])
cut('namesrv/src/main/java/org/apache/rocketmq/namesrv/NamesrvController.java', [
    ('import org.apache.rocketmq.namesrv.processor.ClusterTestRequestProcessor;\n', ''),
    ('this.remotingServer.registerDefaultProcessor(new ClusterTestRequestProcessor(this, '
     'namesrvConfig.getProductEnvName()),\n                this.remotingExecutor);', refuse)])
EOF

j=/usr/share/java
netty=$(ls $j/netty-*-4.1.*.Final.jar | grep -v -e netty-all | tr '\n' ':')
cp="$out/jars/fastjson.jar:${netty}$j/commons-lang3.jar:$j/guava.jar:$j/slf4j-api.jar:$j/commons-cli.jar"
cp="$cp:$j/commons-validator.jar:$j/commons-codec.jar:$j/logback-classic.jar:$j/logback-core.jar"
cp="$cp:$j/snakeyaml.jar"
cp="$cp:$j/jna.jar:$j/commons-collections3.jar"
echo "$cp" > "$out/classpath.txt"

modules="logging common remoting client store acl srvutil filter namesrv broker tools"
(cd "$out/src" && for m in $modules; do find "$m/src/main/java" -name '*.java'; done) \
    | grep -v -e '/dledger/' -e 'OpenTracing' -e 'ClusterTestRequestProcessor' > "$out/sources.txt"
rm -rf "$out/classes" && mkdir -p "$out/classes"
(cd "$out/src" && javac -nowarn -encoding UTF-8 --add-exports java.base/sun.nio.ch=ALL-UNNAMED \
    -d "$out/classes" -cp "$cp" @"$out/sources.txt")
cp -r "$out/src/broker/src/main/resources/." "$out/classes/" 2>/dev/null || true

cat > "$out/run.sh" <<EOF
#!/usr/bin/env bash
# run.sh MAIN-CLASS ARGS...: one of 4.9.3's programs. JHOME (default $out/home) is the JVM's user.home:
# logs in \$JHOME/logs/rocketmqlogs, the Java client's local offsets in \$JHOME/.rocketmq_offsets.
# EXTRA_CP goes first on the class path (your own drivers).
export ROCKETMQ_HOME=$out/src/distribution
exec java -Xms256m -Xmx512m -Duser.home=\${JHOME:-$out/home} \\
    --add-opens java.base/java.nio=ALL-UNNAMED --add-opens java.base/sun.nio.ch=ALL-UNNAMED \\
    --add-exports java.base/sun.nio.ch=ALL-UNNAMED --add-opens java.base/java.lang=ALL-UNNAMED \\
    --add-exports java.base/jdk.internal.ref=ALL-UNNAMED --add-opens java.base/jdk.internal.ref=ALL-UNNAMED \\
    -cp \${EXTRA_CP:+\$EXTRA_CP:}$out/classes:$cp "\$@"
EOF
cat > "$out/mqadmin.sh" <<EOF
#!/usr/bin/env bash
# mqadmin.sh COMMAND -n HOST:PORT ...: 4.9.3's mqadmin
exec $out/run.sh org.apache.rocketmq.tools.command.MQAdminStartup "\$@"
EOF
chmod +x "$out/run.sh" "$out/mqadmin.sh"
echo "built: $out/run.sh org.apache.rocketmq.namesrv.NamesrvStartup" \
     "| org.apache.rocketmq.broker.BrokerStartup;" \
     "$out/mqadmin.sh; client classes for your drivers: javac -cp $out/classes:\$(cat $out/classpath.txt)"
