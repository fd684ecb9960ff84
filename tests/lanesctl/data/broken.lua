-- tests/lanesctl: a syntax error on line 4.
function classify(job)
  if job.partition == "infer"
    return {class = "inference"}
  end
end
