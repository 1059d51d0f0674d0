export interface WorkDoneProgressParams {
  progressToken?: ProgressToken;
}
const params = { progressToken: request.params._meta?.progressToken };
