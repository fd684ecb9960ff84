-- tests/lanesctl: GPU batch jobs are training, the infer partition is inference.
function classify(job)
  if job.partition == "infer" then
    return {class = "inference", reason = "infer partition"}
  end
  if job.batch and job.gpus >= 8 then
    return {class = "training", reason = "8+ GPUs in batch"}
  end
  return nil
end
