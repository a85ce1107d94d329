# The operator image: Python + a JRE, because the embedded Spark runs in local mode
# inside the operator process. Build: docker build -t kafka-retention-operator:0.1.0 .
FROM python:3.11-slim-bookworm AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY operator ./operator
RUN pip wheel --no-cache-dir --wheel-dir /wheels .

FROM python:3.11-slim-bookworm
RUN apt-get update \
    && apt-get install -y --no-install-recommends openjdk-17-jre-headless procps \
    && rm -rf /var/lib/apt/lists/*
COPY --from=build /wheels /wheels
RUN pip install --no-cache-dir /wheels/*.whl && rm -rf /wheels
COPY spark-jobs /opt/kafka-retention/spark-jobs
ENV JAVA_HOME=/usr/lib/jvm/java-17-openjdk-amd64 \
    PYTHONUNBUFFERED=1 \
    KAFKA_RETENTION_SPARK_JOBS=/opt/kafka-retention/spark-jobs
USER 10001
ENTRYPOINT ["kafka-retention"]
CMD ["run", "--all-namespaces"]
