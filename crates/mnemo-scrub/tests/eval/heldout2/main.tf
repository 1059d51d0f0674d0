terraform {
  required_providers {
    aws     = { source = "hashicorp/aws", version = "~> 5.40" }
    random  = { source = "hashicorp/random", version = "~> 3.6" }
    datadog = { source = "DataDog/datadog", version = "~> 3.38" }
  }
}

variable "db_password" {
  type        = string
  sensitive   = true
  description = "Master password of the orders database"
}

resource "random_password" "db" {
  length           = 24
  special          = true
  override_special = "!#$%&*()-_=+[]{}<>:?"
}

resource "aws_db_instance" "orders" {
  identifier          = "orders"
  engine              = "postgres"
  username            = "orders_admin"
  password            = var.db_password
  skip_final_snapshot = true
}

resource "aws_secretsmanager_secret_version" "db" {
  secret_id     = aws_secretsmanager_secret.db.id
  secret_string = jsonencode({ username = "orders_admin", password = random_password.db.result })
}

provider "datadog" {
  api_key = "e86c0f9fbe7b9e2bfb0e78dc0c8602fe"
  app_key = "d8f6c3a9b1e04f7d2c5a8b3e6f9d1c4a7b2e5f80"
}

output "db_password" {
  value     = random_password.db.result
  sensitive = true
}
