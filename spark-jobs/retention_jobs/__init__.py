"""The PySpark offset-computation pipeline: extract facts on executors, transform them with
the planning core (kafka_retention.core), load the plan. Entry point: plan_job."""
