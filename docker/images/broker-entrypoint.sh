#!/bin/sh
# kafka-eos broker image: one KRaft node configured from the environment, like apache/kafka's image.
#   KAFKA_FOO_BAR=value  ->  foo.bar=value in server.properties (every KAFKA_* but the JVM ones)
#   CLUSTER_ID           ->  the id the storage is formatted with (once; a formatted dir is kept)
#   KAFKA_HEAP_OPTS      ->  JVM heap flags (default -Xmx384m -Xms64m)
# Defaults: a combined broker+controller, node 1, data in /var/lib/kafka/data.
set -eu
CONF=/opt/kafka/config
mkdir -p "$CONF"
cat >"$CONF/log4j2.properties" <<'EOF'
status = warn
appender.out.type = Console
appender.out.name = OUT
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.out.ref = OUT
logger.state.name = state.change.logger
logger.state.level = WARN
EOF
{
  echo "process.roles=broker,controller"
  echo "node.id=1"
  echo "controller.quorum.voters=1@localhost:9093"
  echo "listeners=PLAINTEXT://:9092,CONTROLLER://:9093"
  echo "controller.listener.names=CONTROLLER"
  echo "log.dirs=/var/lib/kafka/data"
  env | grep '^KAFKA_' | grep -v -E '^KAFKA_(HEAP|JVM)_OPTS=' | while IFS='=' read -r name value; do
    key=$(echo "${name#KAFKA_}" | tr 'A-Z_' 'a-z.')
    echo "$key=$value"
  done
} >"$CONF/server.properties.raw"
# later lines win: keep the last value of each key
awk -F= '{ last[$1] = $0; order[$1] = NR } END { for (k in last) print order[k] "\t" last[k] }' \
  "$CONF/server.properties.raw" | sort -n | cut -f2- >"$CONF/server.properties"

JAVA="${JAVA_HOME:-/usr/lib/jvm/java-17-openjdk-amd64}/bin/java"
# shellcheck disable=SC2086
set -- "$JAVA" ${KAFKA_HEAP_OPTS:--Xmx384m -Xms64m} -XX:+UseSerialGC -Djava.awt.headless=true \
  -Dlog4j2.configurationFile="$CONF/log4j2.properties" -cp '/opt/kafka/libs/*'
DATA=$(sed -n 's/^log.dirs=//p' "$CONF/server.properties" | cut -d, -f1)
if [ ! -f "$DATA/meta.properties" ]; then
  "$@" kafka.tools.StorageTool format --ignore-formatted -t "${CLUSTER_ID:-4L6g3nShT-eMCtK--X86sw}" \
    -c "$CONF/server.properties"
fi
exec "$@" kafka.Kafka "$CONF/server.properties"
