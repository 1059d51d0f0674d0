use tokio_util::sync::CancellationToken;

pub struct Worker {
    token: CancellationToken,
    progress_token: Option<ProgressToken>,
}

pub fn spawn(token: CancellationToken) -> Worker {
    Worker { token, progress_token: None }
}
