#!/bin/bash
# The image's entrypoint. Spark on Kubernetes starts its driver and executor pods from
# this same image and sets only the container's arguments: `driver ...` or `executor`.
# Anything else is a kafka-retention command line (the default: the operator).
set -euo pipefail

case "${1:-}" in
driver)
    shift
    # Spark's own submission runs the driver in client mode inside this pod, listening
    # on the pod's address; the remaining arguments name the properties file and the job.
    exec "$SPARK_HOME/bin/spark-submit" \
        --deploy-mode client \
        --conf "spark.driver.bindAddress=${SPARK_DRIVER_BIND_ADDRESS}" \
        "$@"
    ;;
executor)
    shift
    # Spark passes the executor's JVM options as SPARK_JAVA_OPT_0, _1, ... in order.
    java_opts=()
    i=0
    while opt_var="SPARK_JAVA_OPT_$i" && [[ -v $opt_var ]]; do
        java_opts+=("${!opt_var}")
        i=$((i + 1))
    done
    exec "$JAVA_HOME/bin/java" \
        "${java_opts[@]}" \
        -Xms"${SPARK_EXECUTOR_MEMORY}" -Xmx"${SPARK_EXECUTOR_MEMORY}" \
        -cp "${SPARK_CLASSPATH:+$SPARK_CLASSPATH:}$SPARK_HOME/jars/*" \
        org.apache.spark.scheduler.cluster.k8s.KubernetesExecutorBackend \
        --driver-url "$SPARK_DRIVER_URL" \
        --executor-id "$SPARK_EXECUTOR_ID" \
        --cores "$SPARK_EXECUTOR_CORES" \
        --app-id "$SPARK_APPLICATION_ID" \
        --hostname "$SPARK_EXECUTOR_POD_IP" \
        --resourceProfileId "${SPARK_RESOURCE_PROFILE_ID:-0}" \
        --podName "${SPARK_EXECUTOR_POD_NAME:-}"
    ;;
*)
    exec kafka-retention "$@"
    ;;
esac
