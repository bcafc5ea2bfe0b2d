#!/bin/sh
# kafka-eos broker image: one KRaft node configured from the environment, like apache/kafka's image.
#   KAFKA_FOO_BAR=value  ->  foo.bar=value in server.properties (every KAFKA_* but the JVM ones)
#   CLUSTER_ID           ->  the id the storage is formatted with (once; a formatted dir is kept)
#   KAFKA_HEAP_OPTS      ->  JVM heap flags (default -Xmx384m -Xms64m)
# Defaults: a combined broker+controller, node 1, data in /var/lib/kafka/data. The image holds
# $CONF/log4j2.properties: the local broker's (connectors/dev/local_kafka.LOG4J, copied by build.py).
set -eu
CONF=/opt/kafka/config
mkdir -p "$CONF"
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
