# The operator image: Python + a JRE, because the embedded Spark runs in local mode inside
# the operator process, and the same image runs Spark's driver and executor pods
# (--spark-mode kubernetes).
#   docker build -t kafka-retention-operator:0.1.0 .
# Without a Docker engine, `make dev-up` builds this file with buildah on a stand-in for
# the base made from Debian packages (hack/devstack/image.py): --build-arg BASE=...
ARG BASE=python:3.11-slim-bookworm

FROM ${BASE} AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY operator ./operator
COPY spark-jobs ./spark-jobs
RUN pip wheel --no-cache-dir --no-deps --wheel-dir /wheels . \
    && python -c "import tomllib; print('\n'.join(tomllib.load(open('pyproject.toml', 'rb'))['project']['dependencies']))" > /requirements.txt

# Spark's Kafka source for the record scans (spark-jobs/pom.xml), collected by Maven in a
# stage of its own, so Maven and the JDK stay out of the image; and the log keys bridge
# that lets the Spark 4.0 connector log on this Spark (spark-jobs/log_keys_bridge.py).
FROM ${BASE} AS jars
RUN apt-get update \
    && apt-get install -y --no-install-recommends maven openjdk-17-jdk-headless \
    && rm -rf /var/lib/apt/lists/*
COPY spark-jobs/pom.xml spark-jobs/log_keys_bridge.py /src/
RUN mvn -q -B -f /src/pom.xml dependency:copy-dependencies -DincludeScope=runtime \
        -DoutputDirectory=/jars \
    && python /src/log_keys_bridge.py /jars
# The group reader (group-reader/): Kafka's own Java Admin, which reads share- and
# streams-group positions librdkafka cannot; on a class path of its own, apart from
# Spark's (whose Kafka client is older).
COPY group-reader /src/group-reader
RUN mvn -q -B -f /src/group-reader/pom.xml dependency:copy-dependencies -DincludeScope=runtime \
        -DoutputDirectory=/group-reader \
    && python /src/group-reader/build.py /group-reader

FROM ${BASE}
RUN apt-get update \
    && apt-get install -y --no-install-recommends openjdk-17-jre-headless procps \
    && rm -rf /var/lib/apt/lists/*
# The dependencies get a layer of their own, before the project's code, keyed by the
# dependency list alone: a code change does not download pyspark (about 450 MB) again.
COPY --from=build /requirements.txt /tmp/requirements.txt
RUN pip install --no-cache-dir -r /tmp/requirements.txt && rm /tmp/requirements.txt
# Stable paths whatever the base: pip's site directory and the JRE's differ between the
# python image and Debian's own Python, and between architectures.
RUN ln -s "$(python -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))')" /opt/spark-home \
    && ln -s "$(dirname "$(dirname "$(readlink -f "$(command -v java)")")")" /opt/java
# In Spark's own jars directory the Kafka source is on the class path of the operator's
# local session and of driver and executor pods alike, with nothing to configure.
COPY --from=jars /jars /tmp/kafka-source-jars
RUN mv /tmp/kafka-source-jars/*.jar /opt/spark-home/jars/ && rmdir /tmp/kafka-source-jars
# A named user for uid 10001: Kopf and Hadoop's login both ask the passwd database for
# the user's name and fail on a bare uid. Home is /tmp, the one writable place when the
# root filesystem is read-only (Spark and Ivy write under $HOME).
RUN useradd --uid 10001 --user-group --no-create-home --home-dir /tmp \
        --shell /usr/sbin/nologin kafka-retention
COPY --from=build /wheels /wheels
RUN pip install --no-cache-dir --no-deps /wheels/*.whl && rm -rf /wheels
# spark-submit is given the plan job as a file (local://...); the package itself is
# installed above, so the driver's and the executors' Python import the same code.
COPY spark-jobs/retention_jobs /opt/kafka-retention/spark-jobs/retention_jobs
COPY --from=jars /group-reader /opt/kafka-retention/group-reader
COPY image/entrypoint.sh /opt/kafka-retention/entrypoint.sh
ENV JAVA_HOME=/opt/java \
    KAFKA_RETENTION_GROUP_READER=/opt/kafka-retention/group-reader \
    SPARK_HOME=/opt/spark-home \
    PYSPARK_PYTHON=python3 \
    PYTHONUNBUFFERED=1
USER 10001
ENTRYPOINT ["/opt/kafka-retention/entrypoint.sh"]
CMD ["run", "--all-namespaces"]
