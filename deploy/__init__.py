"""Deployment files of tute (image, Kubernetes, dashboards, alerts); ``deploy.sync`` keeps the
parts derived from the code in step with it."""
